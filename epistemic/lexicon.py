"""Word lists and patterns: what the statement reader and the rules know about English.

Data only. Lists are deliberately small and common: a word missing here makes a relation go
unnoticed, which is the safe direction.
"""
from __future__ import annotations

import re
from typing import NamedTuple


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# (pattern, replacement, needles): a text holds one of the needles, lower-cased, wherever the pattern matches
# it, so the pattern runs only on such texts (no needle holds a letter that matches another one
# case-insensitively, as "s" does the long s).
CONTRACTIONS = [
    (r"\bcan't\b", "can not", ("n't",)), (r"\bwon't\b", "will not", ("n't",)),
    (r"\bain't\b", "is not", ("n't",)), (r"n't\b", " not", ("n't",)), (r"'m\b", " am", ("'m",)),
    (r"'re\b", " are", ("'re",)), (r"'ve\b", " have", ("'ve",)), (r"'ll\b", " will", ("'ll",)),
    (r"'d\b", " would", ("'d",)), (r"\b(he|she|it|that|there|what|who|where|here|how|this)'s\b", r"\1 is", ("'",)),
    (r"\blet's\b", "let us", ("'",)), (r"(?:^|(?<=\s))'cause\b|\bcuz\b|\bcoz\b", "because", ("'", "cuz", "coz")),
    (r"\bgonna\b", "going to", ("gonna",)), (r"\bwanna\b", "want to", ("wanna",)),
    (r"\bgotta\b", "got to", ("gotta",)), (r"\b([ap])\.m\.?", r"\1m", (".m",)),
    (r"(\d)\s+([ap]m)\b", r"\1\2", ("am", "pm")), (r"\bany more\b", "anymore", ("any more",)),
]
COMPILED_CONTRACTIONS = [(re.compile(p, re.I), r, needles) for p, r, needles in CONTRACTIONS]
# Every repetition that could run over a long stretch of the text is bounded or cannot overlap what follows it,
# so findall stays linear in the text's length (an e-mail's local part is at most 64 characters).
TOKEN = re.compile(
    r"[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+|\d{1,2}:\d{2}(?:[ap]m)?|\+?\d[\d-]*\d(?:st|nd|rd|th|[ap]m|s)?"
    r"|\d(?:st|nd|rd|th|[ap]m)?|'s\b|[^\W\d_]+(?:-[^\W\d_]+)*|[,;]"
)
AUX = _set("am is are was were be been being has have had do does did will")
BE = _set("am is are was were be been being")
HAVE = _set("has have had")
MODALS = _set("would could should might may must can shall")
NEGATIONS = _set("not never")
ADVERBS = _set("still also just really currently recently finally already officially actually always "
               "usually often even then only mostly newly happily definitely totally probably basically "
               "literally soon once ever sometimes truly honestly")
PRONOUNS = _set("he she they it you we this that these those there who what which someone everyone "
                "everybody somebody nobody here u")
PRONOUN_OWNERS = _set("his her their your our its")
DETERMINERS = _set("the a an this that these those our your his her their its my some")
FILLERS = _set("yeah yes yep yup oh wow well so hey hi hello ok okay and but actually honestly btw also "
               "plus anyway um hmm haha lol cool great awesome nice sure thanks aw aww omg totally "
               "definitely ah")
ARTICLES = _set("the a an this that these those some")
IS_CUES = _set("not no now been got going still also never in at from")  # "Alice's in Paris", "Alice's been"
TITLES = _set("dr mr mrs ms prof")
BECOME = _set("became become becomes becoming")
GOT_STATES = _set("married engaged divorced promoted hired")
CLOCK_WORDS = {"noon": "12:00", "midday": "12:00", "midnight": "00:00"}
PARTICLES = _set("in at to for with on about from of by up out into over after")
PREPOSITIONS = _set("in at on to from for with by near inside")
PLACE_PREPS = _set("at on in from for")
MONTHS = {m[:3]: m for m in "january february march april may june july august september october "
          "november december".split()}
WEEKDAYS = _set("monday tuesday wednesday thursday friday saturday sunday")
RELATIVE = _set("yesterday today tomorrow tonight weekend week month year")
DAY_WORDS = WEEKDAYS | _set("today tomorrow yesterday tonight")
# no "one": "one of", "the one who" are pronouns far more often than numbers
NUMBER_WORDS = {n: i for i, n in enumerate(
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split(), start=2)}
NUMBER_WORDS.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80,
                     "ninety": 90, "hundred": 100, "thousand": 1000, "twice": 2, "dozen": 12})
EVENT_NOUNS = _set(
    "meeting launch party wedding conference appointment concert deadline dinner lunch breakfast "
    "flight train bus game match class lecture interview exam test event ceremony festival show "
    "trip reunion release presentation demo call standup stand-up workshop webinar funeral recital "
    "tournament race marathon election premiere session shift surgery checkup check-up review "
    "hearing rehearsal sale opening date visit tour retreat kickoff kick-off offsite seminar")
ANIMALS = _set("dog dogs cat cats puppy kitten rabbit hamster parrot bird fish horse turtle snake "
               "guinea-pig ferret lizard pup")
FAMILY = _set("son daughter brother sister baby child kid")
OCCUPATIONS = _set(
    "engineer developer programmer designer teacher nurse doctor lawyer accountant manager analyst "
    "architect chef cook scientist researcher professor student banker consultant dentist pharmacist "
    "therapist counselor counsellor writer journalist editor artist musician photographer pilot "
    "firefighter officer mechanic electrician plumber carpenter driver cashier clerk barista waiter "
    "waitress salesman saleswoman director ceo cto cfo coo vp president founder intern paralegal "
    "librarian veterinarian vet surgeon physician paramedic technician administrator secretary "
    "recruiter economist translator tutor coach trainer realtor agent entrepreneur dancer actor "
    "actress singer lead head")
COUNTRIES = _set(
    "usa us america canada mexico brazil argentina uk england scotland wales ireland france germany "
    "spain portugal italy netherlands belgium switzerland austria sweden norway denmark finland "
    "poland greece turkey russia ukraine china japan korea india pakistan australia zealand "
    "egypt nigeria kenya africa europe asia israel iran vietnam thailand indonesia philippines "
    "california texas florida ohio oregon colorado arizona nevada georgia illinois michigan "
    "massachusetts virginia carolina pennsylvania minnesota wisconsin "
    "tennessee utah iowa kansas kentucky louisiana alabama missouri maryland indiana quebec ontario")
STREET_WORDS = _set("street st road rd avenue ave lane ln drive dr boulevard blvd way court ct place "
                    "apartment apt suite floor")
ING_NOUNS = EVENT_NOUNS | _set("wedding building morning evening painting thing ring sibling ceiling "
                               "feeling clothing wing spring string savings earring darling ending")
NOT_NAMES = _set("sounds looks seems feels hope wish guess bet miss congrats congratulations sorry glad "
                 "lost went got made started finished loved tried saw heard found")
MOODS = _set("excited thrilled happy sad glad tired exhausted sorry proud grateful thankful stoked nervous "
              "anxious stressed bored busy swamped overwhelmed hopeful optimistic amazed impressed inspired "
              "lucky blessed curious ready relieved pumped psyched upset worried scared afraid angry mad "
              "sure certain confident jealous keen eager down lonely content satisfied honored "
              "honoured touched moved stuck fine okay ok good great awesome amazing fantastic well")
CLUB_WORDS = _set("club group team class gym community band choir league circle society crew")
SYNONYMS = {"favorite": "favourite", "fave": "favourite", "fav": "favourite", "colour": "color",
            "kids": "children", "kid": "child", "mom": "mother", "mum": "mother", "dad": "father",
            "e-mail": "email", "cellphone": "phone", "telephone": "phone", "cell": "phone",
            "colours": "colors", "grey": "gray", "puppy": "dog", "kitten": "cat", "pup": "dog"}
IRREGULAR = {"broke": "break", "broken": "break", "lost": "lose", "went": "go", "gone": "go",
             "got": "get", "gotten": "get", "ran": "run", "ate": "eat", "eaten": "eat", "fell": "fall",
             "fallen": "fall", "left": "leave", "made": "make", "took": "take", "taken": "take",
             "saw": "see", "seen": "see", "felt": "feel", "kept": "keep", "met": "meet", "paid": "pay",
             "sold": "sell", "told": "tell", "won": "win", "wrote": "write", "written": "write",
             "bought": "buy", "brought": "bring", "caught": "catch", "taught": "teach",
             "thought": "think", "children": "child", "kids": "child", "kid": "child", "began": "begin",
             "drove": "drive", "flew": "fly", "grew": "grow", "hit": "hit",
             "sick": "ill", "illness": "ill", "died": "die", "death": "die", "dead": "die"}
IRREGULAR_PAST = _set("went got made took saw felt kept met paid sold told won wrote bought brought "
                      "caught taught thought began drove flew grew ran ate fell left lost broke had "
                      "did was were said came became gave spent sent")
STOPWORDS = AUX | MODALS | NEGATIONS | ADVERBS | PRONOUNS | PRONOUN_OWNERS | DETERMINERS | FILLERS | \
    PARTICLES | _set(
        "i me my mine myself you yours him hers them us and or but if so because as than too very "
        "no yes not of off out same such more most other some any each every all both few "
        "again further here there when where why how what which who whom whose whether while "
        "about against between through during before after above below under until since "
        "get gets getting got make makes made go goes going really thing things lot lots "
        "pretty super kind sort bit way one ones much many something anything nothing everything "
        "like just know think thinks feel feeling felt want wanted love glad happy sure good great "
        "awesome amazing cool nice fun wow yeah time times day days stuff gonna let us now then "
        "also even well keep see look looks looking able lol haha thanks thank hey hi "
        "can could would should will shall am is are was were be been being do does did done "
        "having has have had say said says tell told im ive other others another")
TIME_WORDS = WEEKDAYS | _set("yesterday tomorrow tonight week weeks month months year years weekend ago "
                             "last next morning evening night")
BOUNDARY = STOPWORDS - DETERMINERS | _set(", ; every each last next yesterday today tomorrow tonight "
                                          "anymore again named called")
NP_STOP = AUX | MODALS | NEGATIONS | ADVERBS | _set(", ; 's and or who that which because but so now nowadays no")

START, END = "start", "end"
DEPARTED = "departed"  # "left X": whichever attribute of the other grain has the value X
AGENT, EVENT, THING = "agent", "event", "thing"


class Predicate(NamedTuple):
    """A verb phrase that names an attribute: "moved to" -> residence, with a change."""

    pattern: str
    attribute: str
    change: str | None = None
    subject: str = AGENT  # AGENT: people (and things); EVENT: events only; THING: anything not a person
    after: str = ""  # "be": only after "is" ("is from"); "verb": never after it ("is like" compares)
    negative: bool = False  # "hates" is "likes" said the other way


_JOB_OWNER = r"(?:my |his |her |their |the |a )?"
PREDICATES = [
    Predicate(r"(?:moved|rescheduled|postponed|pushed back|pushed|delayed|changed|shifted|brought forward"
              r"|bumped) (?:to|until|till|for)", "schedule", START, EVENT),
    Predicate(r"(?:cancelled|canceled|called off|scrapped)", "schedule", END, EVENT),
    Predicate(r"(?:scheduled|planned|set|slated|booked|due|held|happening|taking place)(?: (?:for|on|at|in))?",
              "schedule", None, EVENT),
    Predicate(r"(?:starts?|begins?|kicks? off|takes? place|happens?|leaves?|departs?|arrives?|lands?|ends?"
              r"|finish(?:es)?|opens?)(?: (?:at|on|in|from))?", "schedule", None, EVENT),
    Predicate(r"(?:opens|closes|open|close)(?: at| on)?", "schedule", None, THING),
    Predicate(r"(?:expires?|expired|renews?|renewed)(?: (?:on|at|in))?", "schedule", None, THING),
    Predicate(r"(?:moved|relocated)(?: back| away)? to", "residence", START),
    Predicate(r"(?:live|lives|lived|living|reside|resides|resided|residing) (?:in|at)", "residence"),
    Predicate(r"(?:based|located|settled) (?:in|at|out of)", "residence"),
    Predicate(r"(?:got|started|found|landed|took|accepted|has) (?:a )?new job (?:at|with)", "employer", START),
    Predicate(r"(?:got|started|found|landed|took|accepted) (?:a )?job (?:at|with)", "employer", START),
    Predicate(r"(?:a )?new job (?:at|with)", "employer", START),
    Predicate(r"started (?:working|work) (?:at|for)", "employer", START),
    Predicate(r"(?:hired|recruited) (?:by|at)", "employer", START),
    Predicate(r"joined", "employer", START),
    Predicate(rf"(?:quit|left|lost) {_JOB_OWNER}job (?:at|with)", "employer", END),
    Predicate(rf"(?:quit|left|lost) {_JOB_OWNER}job as", "role", END),
    Predicate(r"(?:retired|resigned) from", "employer", END),
    Predicate(r"(?:laid off|fired) (?:from|by)", "employer", END),
    Predicate(r"(?:left|quit)", DEPARTED, END),
    Predicate(r"(?:work|works|worked|working) (?:at|for)", "employer"),
    Predicate(r"employed (?:by|at|with)", "employer"),
    Predicate(r"(?:a )?job (?:at|with)", "employer"),
    Predicate(r"(?:work|works|worked|working) as", "role"),
    Predicate(r"(?:got )?promoted to", "role", START),
    Predicate(r"(?:report|reports|reporting) to", "manager"),
    Predicate(r"(?:married|engaged) to", "partner"),
    Predicate(r"(?:dating|dates|in a relationship with)", "partner"),
    Predicate(r"(?:broke up|split up|separated) (?:with|from)", "partner", END),
    Predicate(r"turned", "age", START),
    Predicate(r"(?:drive|drives|driving)", "car"),
    Predicate(r"(?:attends|attending|enrolled at|enrolled in|a student at|studies at|studying at)", "school"),
    Predicate(r"(?:hate|hates|dislike|dislikes|detest|detests|can not stand)", "likes", negative=True),
    Predicate(r"(?:like|likes|love|loves|enjoy|enjoys|adore|adores)", "likes", after="verb"),
    Predicate(r"(?:a big fan of|a huge fan of|a fan of|fond of|into)", "likes", after="be"),
    Predicate(r"(?:prefer|prefers)", "prefers"),
    Predicate(r"allergic to", "allergy"),
    Predicate(r"born (?:on|in)", "birth"),
    Predicate(r"(?:originally from|from)", "origin", after="be"),
    Predicate(r"(?:comes|come) from", "origin"),
]
COMPILED = [(re.compile(rf"^{p.pattern}\b ?"), p) for p in PREDICATES]
SLOTTED = {"schedule", "birth"}  # values compared slot by slot: time, day, weekday, year, place
FUNCTIONAL = _set("residence employer role manager partner age car school origin schedule birth relationship "
                  "phone email address salary name height weight rent title major nationality hometown timezone "
                  "password username nickname")
NOUN_ATTRIBUTES = {
    "job": "employer", "employer": "employer", "company": "employer", "workplace": "employer",
    "role": "role", "title": "role", "job title": "role", "position": "role", "occupation": "role",
    "home": "residence", "address": "address", "home address": "address", "phone": "phone",
    "phone number": "phone", "number": "phone", "mobile": "phone", "email": "email",
    "email address": "email", "wife": "partner", "husband": "partner", "partner": "partner",
    "spouse": "partner", "boyfriend": "partner", "girlfriend": "partner", "fiance": "partner",
    "fiancee": "partner", "boss": "manager", "manager": "manager", "supervisor": "manager",
    "age": "age", "birthday": "birth", "date of birth": "birth", "car": "car", "hometown": "hometown",
}
STATUSES = _set("single married engaged divorced widowed separated")
NEW_MARKERS, OLD_MARKERS = _set("new"), _set("old former previous ex")
STOPPERS = _set("stopped quit")  # "stopped drinking coffee" ends "drinks coffee"
