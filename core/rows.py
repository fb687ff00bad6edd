"""A model row as plain JSON data and back: what a tombstone keeps of a purged grain, its conduits and
history, so a restore puts them back exactly as they were."""
from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Model


def plain(data: object) -> object:
    """JSON-ready: dates as ISO strings."""
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def model_row(obj: Model) -> dict:
    return plain({f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields})


def model_rebuilt(model: type[Model], row: dict) -> Model:
    return model(**{f.attname: f.to_python(row[f.attname]) for f in model._meta.concrete_fields if f.attname in row})
