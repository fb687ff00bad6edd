"""One-time, short-lived login links to the Django admin (`flux admin`): no password to set or forget."""
from __future__ import annotations

import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model, login
from django.core import signing
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.utils import timezone

from core.conf import flux_setting as S
from core.errors import RateLimited
from core.throttle import throttle
from grains.models import LoginLinkUse

SALT = "flux.admin-link"
ADMIN_USERNAME = "flux-admin"


def admin_link_token() -> str:
    """A signed token naming the instance's admin user and a fresh nonce."""
    user, created = get_user_model().objects.get_or_create(
        username=ADMIN_USERNAME, defaults={"is_staff": True, "is_superuser": True})
    if created:
        user.set_unusable_password()
        user.save()
    return signing.dumps({"user": user.pk, "nonce": secrets.token_urlsafe(16)}, salt=SALT)


def admin_link_login(request: HttpRequest, token: str) -> HttpResponse:
    """Log in with a link once, within ADMIN_LINK_SECONDS of its making, then go to the admin."""
    try:
        throttle(request, "login-link", "RATE_LOGIN_LINK", per_address=True)
    except RateLimited as exc:
        refused = HttpResponse(f"Login link refused: {exc.message}.\n", status=429, content_type="text/plain")
        refused["Retry-After"] = str(exc.details["retry_after"])
        return refused
    max_age = S("ADMIN_LINK_SECONDS")
    try:
        data = signing.loads(token, salt=SALT, max_age=max_age)
    except signing.SignatureExpired:
        return _refused(f"this link is older than {max_age} s; run `flux admin` again for a new one")
    except signing.BadSignature:
        return _refused("this link is not valid; run `flux admin` for a new one")
    try:  # the nonce's unique row: of two uses at once, exactly one inserts it
        with transaction.atomic():
            LoginLinkUse.objects.filter(used_at__lt=timezone.now() - timedelta(seconds=max_age + 60)).delete()
            LoginLinkUse.objects.create(nonce=str(data["nonce"])[:64], used_at=timezone.now())
    except IntegrityError:
        return _refused("this link was used already; run `flux admin` for a new one")
    user = get_user_model().objects.filter(pk=data["user"], is_active=True, is_staff=True).first()
    if user is None:
        return _refused("the admin user of this link no longer exists; run `flux admin` again")
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    return HttpResponseRedirect("/admin/")


def _refused(reason: str) -> HttpResponse:
    return HttpResponse(f"Login link refused: {reason}.\n", status=403, content_type="text/plain")
