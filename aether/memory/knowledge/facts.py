"""What a statement is about: its subject, the attribute it sets, and the value.

The belief lifecycle (:mod:`aether.memory.knowledge.beliefs`), ``memory_replace`` and
``memory_forget --about`` decide with these rules, not with similarity alone:

* two statements about **different subjects** (``the production API key`` /
  ``the staging API key``, ``Marta`` / ``Ivo``, ``INV-7731`` / ``INV-7731B``) or **different
  attributes** of one subject (where the user lives / where the user works) never
  supersede nor reinforce each other;
* a **single-valued attribute** (employer, location, diet, device, phone, e-mail,
  address, IP, partner, state...) of one subject given another value is a change: the new
  statement supersedes the old, whatever words it uses ("left banking for a robotics
  startup" replaces "works at Halvard Bank"), with a negation ("no longer eats meat") or
  a date ("As of March the office is in Leeds");
* a **multi-valued** one (likes, visited, plays...) changes only by negation ("likes
  coffee" / "no longer likes coffee"); another value is another fact.

:func:`parse` reads a clause without a model: the subject is the words before the verb
("I", "my", "the user" are the user; "Marta's phone" is Marta's phone), the attribute the
verb's family (:data:`FAMILIES`) or the possessed noun ("my laptop is..." sets the device),
the value what follows. :func:`split_compound` cuts "X is engaged to Priya and teaches at
Lakeside School" into one clause per attribute, so each is kept and replaced on its own.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from aether.identifiers import fold, identifiers_in, skeleton
from aether.memory.retrieval.text import STOPWORDS, words

__all__ = [
    "USER",
    "VERB_FORMS",
    "Claim",
    "Relation",
    "describe",
    "parse",
    "relation",
    "split_compound",
    "strip_time",
]

USER = "user"
"""The subject every first-person statement has."""

VERB_FORMS: dict[str, str] = {}
"""Verb forms the rules read, each to its lemma (``lives`` -> ``live``)."""


def _verbs(lemma: str, *forms: str) -> None:
    for form in (lemma, *forms):
        VERB_FORMS[form] = lemma


for _lemma, *_forms in (
    ("be", "is", "are", "was", "were", "am", "been", "being"),
    ("have", "has", "had", "having"),
    ("live", "lives", "lived", "living"),
    ("move", "moves", "moved", "moving"),
    ("relocate", "relocates", "relocated", "relocating"),
    ("reside", "resides", "resided"),
    ("settle", "settles", "settled"),
    ("work", "works", "worked", "working"),
    ("join", "joins", "joined", "joining"),
    ("quit", "quits", "quitting"),
    ("leave", "leaves", "left", "leaving"),
    ("start", "starts", "started", "starting"),
    ("teach", "teaches", "taught", "teaching"),
    ("study", "studies", "studied", "studying"),
    ("eat", "eats", "ate", "eating", "eaten"),
    ("drink", "drinks", "drank", "drinking"),
    ("use", "uses", "used", "using"),
    ("switch", "switches", "switched", "switching"),
    ("drive", "drives", "drove", "driving", "driven"),
    ("own", "owns", "owned", "owning"),
    ("buy", "buys", "bought", "buying"),
    ("like", "likes", "liked", "liking"),
    ("love", "loves", "loved", "loving"),
    ("enjoy", "enjoys", "enjoyed", "enjoying"),
    ("prefer", "prefers", "preferred", "preferring"),
    ("hate", "hates", "hated"),
    ("play", "plays", "played", "playing"),
    ("speak", "speaks", "spoke", "speaking"),
    ("visit", "visits", "visited", "visiting"),
    ("go", "goes", "went", "going", "gone"),
    ("marry", "marries", "married"),
    ("date", "dates", "dated", "dating"),
    ("meet", "meets", "met", "meeting"),
    ("run", "runs", "ran", "running"),
    ("lead", "leads", "led", "leading"),
    ("manage", "manages", "managed", "managing"),
    ("earn", "earns", "earned", "earning"),
    ("cost", "costs", "costing"),
    ("weigh", "weighs", "weighed"),
    ("rotate", "rotates", "rotated", "rotating"),
    ("expire", "expires", "expired"),
    ("become", "becomes", "became", "becoming"),
    ("stop", "stops", "stopped", "stopping"),
    ("follow", "follows", "followed", "following"),
    ("carry", "carries", "carried"),
    ("host", "hosts", "hosted", "hosting"),
    ("point", "points", "pointed"),
    ("resolve", "resolves", "resolved"),
    ("listen", "listens", "listened"),
    ("climb", "climbs", "climbed", "climbing"),
    ("need", "needs", "needed"),
    ("want", "wants", "wanted"),
    ("rent", "rents", "rented"),
    ("attend", "attends", "attended"),
    ("belong", "belongs", "belonged"),
    ("report", "reports", "reported"),
    ("call", "calls", "called"),
    ("name",),
    ("reach",),
):
    _verbs(_lemma, *_forms)
_AUX = frozenset(
    [
        "will",
        "would",
        "shall",
        "should",
        "can",
        "could",
        "may",
        "might",
        "must",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "is",
        "are",
        "was",
        "were",
        "am",
        "been",
        "be",
    ]
)
_ADVERBS = frozenset(
    [
        "now",
        "no",
        "longer",
        "not",
        "never",
        "also",
        "still",
        "just",
        "recently",
        "finally",
        "currently",
        "actually",
        "already",
        "again",
        "then",
        "really",
        "officially",
        "permanently",
        "temporarily",
        "n't",
    ]
)
_DETERMINERS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "our",
        "his",
        "her",
        "their",
        "its",
        "your",
    ]
)
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "user", "the user", "user's"})
_NEGATIONS = frozenset(
    ["not", "no", "never", "n't", "dont", "doesnt", "didnt", "isnt", "wasnt", "arent", "cannot"]
)

# attribute families: which verb (with its preposition) or possessed noun sets what
_EMPLOYER_NOUNS = frozenset(
    [
        "employer",
        "job",
        "company",
        "workplace",
        "firm",
        "bank",
        "banking",
        "startup",
        "start-up",
        "office",
        "team",
        "role",
        "position",
        "career",
        "agency",
        "studio",
        "lab",
        "labs",
        "corp",
        "inc",
        "ltd",
        "llc",
        "school",
        "university",
    ]
)
_DIET_WORDS = frozenset(
    [
        "vegetarian",
        "vegan",
        "pescatarian",
        "carnivore",
        "omnivore",
        "keto",
        "paleo",
        "meat",
        "fish",
        "dairy",
        "gluten",
        "halal",
        "kosher",
        "plant-based",
        "diet",
    ]
)
_LAPTOPS = frozenset(
    [
        "laptop",
        "notebook",
        "macbook",
        "thinkpad",
        "xps",
        "chromebook",
        "surface",
        "framework",
        "ideapad",
        "zenbook",
        "spectre",
        "latitude",
    ]
)
_PHONES = frozenset(
    ["phone", "iphone", "pixel", "galaxy", "android", "smartphone", "mobile", "handset"]
)
_CARS = frozenset(
    ["car", "tesla", "corolla", "civic", "prius", "golf", "mustang", "truck", "van", "suv"]
)
_STATES = frozenset(
    [
        "disputed",
        "paid",
        "unpaid",
        "overdue",
        "open",
        "closed",
        "pending",
        "resolved",
        "cancelled",
        "canceled",
        "active",
        "inactive",
        "down",
        "up",
        "online",
        "offline",
        "broken",
        "fixed",
        "deprecated",
        "approved",
        "rejected",
        "shipped",
        "delivered",
        "blocked",
        "done",
        "finished",
        "retired",
        "live",
        "deployed",
        "failing",
        "healthy",
    ]
)
_ROLES = frozenset(
    [
        "analyst",
        "engineer",
        "developer",
        "teacher",
        "nurse",
        "manager",
        "designer",
        "student",
        "doctor",
        "lawyer",
        "accountant",
        "consultant",
        "scientist",
        "researcher",
        "chef",
        "writer",
        "architect",
        "founder",
        "ceo",
        "cto",
        "director",
        "intern",
        "freelancer",
        "programmer",
        "pilot",
        "driver",
    ]
)
_RELATIONSHIP = frozenset(
    ["engaged", "married", "single", "dating", "divorced", "widowed", "partnered"]
)
_POSSESSED: dict[str, str] = {
    **{w: "employer" for w in ("employer", "job", "company", "workplace", "work")},
    **{w: "device:laptop" for w in _LAPTOPS},
    **{w: "device:phone" for w in ("phone", "smartphone", "handset")},
    **{w: "device:car" for w in ("car", "vehicle")},
    **{w: "phone" for w in ("phone number", "number", "mobile", "mobile number", "cell")},
    **{w: "email" for w in ("email", "e-mail", "mail", "email address", "e-mail address")},
    **{w: "address" for w in ("address", "home address", "postal address", "street address")},
    **{w: "ip" for w in ("ip", "ip address", "address ip")},
    **{w: "diet" for w in ("diet",)},
    **{w: "location" for w in ("home", "city", "location", "hometown", "base", "office")},
    **{w: "partner" for w in ("partner", "wife", "husband", "fiance", "fiancee", "spouse")},
    **{w: "partner" for w in ("girlfriend", "boyfriend")},
    **{w: "occupation" for w in ("role", "title", "job title", "occupation", "profession")},
    **{w: "name" for w in ("name", "full name", "nickname")},
    **{w: "age" for w in ("age",)},
}
MULTI_VALUED = frozenset(
    [
        "like",
        "love",
        "enjoy",
        "hate",
        "play",
        "speak",
        "visit",
        "go",
        "meet",
        "buy",
        "need",
        "want",
        "attend",
        "listen",
        "climb",
        "have",
        "own",
        "read",
        "host",
    ]
)
"""Verbs that hold several values at once: another value is another fact."""

_TIME = (
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday|today|tonight|tomorrow|yesterday|now|"
    r"(?:next|last|this)\s+(?:week|month|year|quarter|spring|summer|autumn|fall|winter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)|\d{4}(?:-\d{2}(?:-\d{2})?)?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+\w+|\w+\s+\d{1,2}(?:st|nd|rd|th)?)(?:,?\s+\d{4})?"
)
_TIME_LEAD = re.compile(
    rf"^\s*(?:(?:as of|since|from|starting(?: from| on)?|beginning|effective(?: from)?|"
    rf"until|till|after|in|on)\s+{_TIME}|now|currently|these days|nowadays|today)\s*,?\s+",
    re.IGNORECASE,
)
_TIME_TAIL = re.compile(
    rf"\s*,?\s+(?:(?:as of|since|from|starting(?: from| on)?|beginning|effective(?: from)?|"
    rf"until|till)\s+{_TIME}|now|anymore|any more|these days|nowadays|instead|again|"
    rf"for good|from now on)\s*(?=[.!]?\s*$)",
    re.IGNORECASE,
)
_IPV4 = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"\+?\d[\d\s().-]{6,}\d")
_WORD = re.compile(r"[\w@+#][\w@.+#'’-]*[\w]|[\w]")


class Relation(StrEnum):
    """How a new statement relates to an old one."""

    SAME = "same"
    """The same value of the same attribute of the same subject: it reinforces."""
    REPLACES = "replaces"
    """Another value of the same single-valued attribute (or a negation): it supersedes."""
    DISTINCT = "distinct"
    """Another subject, another attribute, or another value of a multi-valued one."""
    UNKNOWN = "unknown"
    """The rules cannot read one of them: similarity and the heuristics decide."""


@dataclass(frozen=True)
class Claim:
    """One statement read as subject, attribute and value (see the module docs).

    Attributes:
        subject: the canonical subject (``user``, ``production api key``, ``inv7731``).
        attribute: the attribute's family (``employer``, ``location``, ``device:laptop``)
            or the verb with its preposition (``climb at``).
        value: the value's content words, folded.
        negated: the statement denies it ("no longer", "not", "never").
        single: the attribute holds one value at a time.
        identifiers: the identifiers the statement names (skeletons).
        when: the time qualifier it carried ("as of march"), if any.
    """

    subject: str
    attribute: str
    value: frozenset[str]
    negated: bool
    single: bool
    identifiers: frozenset[str]
    when: str | None = None

    @property
    def slot(self) -> str:
        """A short stable key of subject and attribute (beliefs keep it, indexed)."""
        return hashlib.sha1(f"{self.subject}\x1f{self.attribute}".encode()).hexdigest()[:16]


def strip_time(clause: str) -> tuple[str, str | None]:
    """The clause without a leading or trailing time qualifier, and the qualifier."""
    when = None
    lead = _TIME_LEAD.match(clause)
    if lead:
        when = lead.group(0).strip(" ,").lower()
        clause = clause[lead.end() :]
    tail = _TIME_TAIL.search(clause)
    if tail:
        when = when or tail.group(0).strip(" ,.").lower()
        clause = clause[: tail.start()] + clause[tail.end() :]
    return clause.strip(), when


def _tokens(clause: str) -> list[str]:
    out: list[str] = []
    for raw in _WORD.findall(clause.replace("’", "'")):
        low = raw.lower()
        if low.endswith("n't"):
            out += [low[:-3] or "not", "n't"] if low not in ("can't", "won't") else ["n't"]
        else:
            out.append(low)
    return out


def _subject_key(words_: list[str], aliases: Mapping[str, str]) -> str:
    phrase = " ".join(w for w in words_ if w not in _DETERMINERS and w not in _ADVERBS)
    phrase = phrase.strip()
    if phrase in _FIRST_PERSON or not phrase:
        return USER
    folded = fold(phrase)
    if folded in aliases:
        return aliases[folded]
    ids = identifiers_in(phrase)
    plain = [w for w in words_ if w not in _DETERMINERS and w not in _ADVERBS]
    plain = [w for w in plain if skeleton(w) not in ids and not any(c.isdigit() for c in w)]
    return " ".join([*(fold(w) for w in plain), *ids]).strip() or USER


def _value_words(words_: list[str]) -> frozenset[str]:
    kept = [
        w
        for w in words_
        if w not in STOPWORDS and w not in _ADVERBS and w not in _NEGATIONS and w != "back"
    ]
    out: set[str] = set()
    for w in kept:
        if any(c.isdigit() for c in w) or "@" in w:
            out.add(skeleton(w))
        else:
            out.update(words(w) or [w])
    return frozenset(out)


def _family(lemma: str, prep: str, rest: list[str], sentence: str) -> tuple[str, bool]:
    """The attribute a verb sets, and whether it holds one value at a time."""
    rest_set = set(rest)
    device = _device(rest_set)
    if _EMAIL.search(sentence) and lemma in ("be", "reach", "use", "have", "email"):
        return "email", True
    if lemma in ("work", "join", "quit", "teach") or (lemma == "start" and prep == "at"):
        return "employer", True
    if lemma == "leave" and (rest_set & _EMPLOYER_NOUNS or "for" in rest_set):
        return "employer", True
    if lemma in ("live", "relocate", "reside", "settle") or (lemma == "move" and not device):
        return "location", True
    if lemma == "leave":
        return "location", True
    if lemma in ("eat", "stop") and rest_set & _DIET_WORDS:
        return "diet", True
    if lemma in ("go", "become", "follow") and rest_set & _DIET_WORDS:
        return "diet", True
    if lemma in ("use", "switch", "move", "buy", "own", "have", "carry", "drive") and device:
        return f"device:{device}", True
    if lemma in ("marry", "date"):
        return "partner", True
    if lemma == "study":
        return "school", True
    if lemma == "have" and _IPV4.search(sentence):
        return "ip", True
    if lemma in ("have", "weigh", "cost", "earn") and any(c.isdigit() for c in sentence):
        unit = next((w for w in rest if not any(c.isdigit() for c in w)), "")
        return f"{lemma}:{unit}", True
    attribute = f"{lemma} {prep}".strip()
    return attribute, lemma not in MULTI_VALUED


def _device(words_: set[str]) -> str:
    if words_ & _LAPTOPS:
        return "laptop"
    if words_ & _PHONES:
        return "phone"
    if words_ & _CARS:
        return "car"
    return ""


def _copula(rest: list[str], sentence: str) -> tuple[str, bool]:
    """The attribute "X is ..." sets, from its complement."""
    rest_set = set(rest)
    head = rest[0] if rest else ""
    if _EMAIL.search(sentence):
        return "email", True
    if _IPV4.search(sentence):
        return "ip", True
    device = _device(rest_set)
    if device:
        return f"device:{device}", True
    if head in ("in", "at", "based", "located", "from") and not rest_set & _ROLES:
        return "location", True
    if rest_set & _RELATIONSHIP:
        return "partner", True
    if rest_set & _DIET_WORDS:
        return "diet", True
    if rest_set & _ROLES:
        return ("employer" if "at" in rest_set or "for" in rest_set else "occupation"), True
    if rest_set & _STATES:
        return "state", True
    if "years" in rest_set and "old" in rest_set:
        return "age", True
    if _PHONE.search(sentence):
        return "phone", True
    if identifiers_in(" ".join(rest)):
        return "value", True
    return f"is {rest[-1]}" if rest else "is", False


def _split_possessive(subject: list[str]) -> tuple[list[str], str]:
    """``my laptop`` -> (``[i]``, ``laptop``); ``marta's phone number`` -> ``marta``."""
    if subject and subject[0] in ("my", "our"):
        return ["i"], " ".join(subject[1:])
    for i, w in enumerate(subject):
        if w.endswith(("'s", "s'")) and i < len(subject) - 1:
            owner = [*subject[:i], w[:-2] if w.endswith("'s") else w[:-1]]
            return owner, " ".join(subject[i + 1 :])
    if "of" in subject[1:]:
        at = subject.index("of", 1)
        return subject[at + 1 :], " ".join(w for w in subject[:at] if w not in _DETERMINERS)
    return subject, ""


_NOUN_FIRST = frozenset(["name", "call", "date", "work", "use", "run", "meeting", "lead"])
_QUALIFIED = frozenset(["email", "phone", "address", "ip", "device"])
"""Families of which one subject may hold several kinds (work and personal e-mail)."""
_PLAIN_ADJECTIVES = frozenset(["new", "old", "current", "main", "latest", "usual", "present"])


def _possessed_attribute(possessed: str) -> str:
    """The attribute a possessed noun names: ``phone number`` -> ``phone``.

    A qualifier keeps two of a kind apart (``work email`` / ``personal email``); "new",
    "current" and the like do not qualify (``new number`` is the number).
    """
    words_ = [w for w in possessed.split() if w not in _PLAIN_ADJECTIVES] or possessed.split()
    phrase = " ".join(words_)
    if phrase in _POSSESSED:
        return _POSSESSED[phrase]
    family = _POSSESSED.get(words_[-1])
    if family is None:
        return phrase
    qualifier = " ".join(words_[:-1])
    if qualifier and family.split(":")[0] in _QUALIFIED:
        return f"{family}:{qualifier}"
    return family


def _main_verb(tokens: list[str]) -> int | None:
    """The index of the verb a clause's attribute comes from."""
    found = None
    for i, w in enumerate(tokens):
        previous = tokens[i - 1] if i else ""
        after_owner = previous.endswith(("'s", "s'")) or previous in _DETERMINERS | {"my"}
        if w in VERB_FORMS and not after_owner and not (i == 0 and w in _NOUN_FIRST):
            found = i
            break
    if found is None:
        for i, w in enumerate(tokens[1:], 1):  # "Marta boulders at ...": a word in -s
            previous = tokens[i - 1]
            if (
                w.endswith("s")
                and not w.endswith("ss")
                and len(w) > 3
                and previous not in (_DETERMINERS | STOPWORDS)
            ):
                return i
        return None
    # "has moved", "will be", "is now living": the last verb of the chain is the main one
    i = found
    while tokens[i] in _AUX:
        j = i + 1
        while j < len(tokens) and tokens[j] in _ADVERBS | _NEGATIONS:
            j += 1
        if j < len(tokens) and tokens[j] in VERB_FORMS and tokens[j] not in ("name", "date"):
            i = j
            continue
        break
    return i


def parse(statement: str, aliases: Mapping[str, str] | None = None) -> Claim | None:
    """The claim of one clause, or ``None`` when it has no readable subject and verb.

    Args:
        statement: one clause ("Marta's phone number is +351 912 345 678").
        aliases: folded names -> the canonical subject they stand for (the graph's
            aliases); "User" and the first person are always the user.
    """
    clause, when = strip_time(statement.strip().rstrip(".!"))
    if not clause or clause.endswith("?"):
        return None
    tokens = _tokens(clause)
    at = _main_verb(tokens)
    if at is None or (at == 0 and tokens[0] not in ("i",)):
        return None
    subject_words = [w for w in tokens[:at] if w not in _AUX]
    while subject_words and subject_words[-1] in _ADVERBS | _NEGATIONS:
        subject_words.pop()
    negated = any(w in _NEGATIONS for w in tokens[: at + 2]) or (
        "longer" in tokens and "no" in tokens
    )
    verb = tokens[at]
    lemma = VERB_FORMS.get(verb, verb.removesuffix("es") if verb.endswith("ches") else verb)
    if lemma == verb and verb.endswith("s") and verb not in VERB_FORMS:
        lemma = verb[:-1]
    rest = [w for w in tokens[at + 1 :] if w not in _ADVERBS and w not in _NEGATIONS]
    if lemma == "stop" and rest and rest[0] in VERB_FORMS:  # "stopped eating meat"
        negated, lemma, rest = True, VERB_FORMS[rest[0]], rest[1:]
    while rest and rest[0] in ("back", "over"):
        rest = rest[1:]
    if lemma in ("leave", "quit"):  # "left X for Y": Y now; "quit X": X no longer
        if "for" in rest:
            rest = rest[rest.index("for") + 1 :]
        else:
            negated = not negated
    prep = rest[0] if rest and rest[0] in ("in", "at", "for", "to", "with", "on", "from") else ""
    owner, possessed = _split_possessive(subject_words)
    single = True
    if lemma == "be" and possessed:
        attribute = _possessed_attribute(possessed)
        subject_words = owner
    elif lemma == "be":
        attribute, single = _copula(rest, clause)
    elif possessed and lemma not in ("have",):
        attribute, single = _family(lemma, prep, rest, clause)
        subject_words = [*owner, *possessed.split()]
    else:
        if possessed:
            subject_words = [*owner, *possessed.split()]
        attribute, single = _family(lemma, prep, rest, clause)
    value_words = rest[1:] if prep and prep == (rest[0] if rest else "") else rest
    return Claim(
        subject=_subject_key(subject_words, aliases or {}),
        attribute=attribute,
        value=_value_words(value_words),
        negated=negated,
        single=single,
        identifiers=frozenset(identifiers_in(statement)),
        when=when,
    )


def relation(old: Claim | None, new: Claim | None) -> Relation:
    """How ``new`` relates to ``old`` (see :class:`Relation`)."""
    if old is None or new is None:
        return Relation.UNKNOWN
    if old.subject != new.subject or old.attribute != new.attribute:
        return Relation.DISTINCT
    same_value = old.value == new.value or (
        bool(old.value) and bool(new.value) and (old.value <= new.value or new.value <= old.value)
    )
    if same_value and old.negated == new.negated:
        return Relation.SAME
    if same_value or old.single:
        return Relation.REPLACES
    return Relation.DISTINCT


def describe(target: str, aliases: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The (subject, attribute) a description names: "my employer", "Marta's phone".

    A statement ("The user works at Nimbus") names its own subject and attribute; a noun
    phrase names an attribute of its owner (the user when none is said); "where I live"
    names the attribute its verb sets.
    """
    text_ = re.sub(r"^(?:what|where|who|which|how)\s+", "", target.strip().rstrip("?."), flags=re.I)
    text_ = re.sub(r"^(?:everything|anything|all)\s+(?:about|on)\s+", "", text_, flags=re.I)
    claim = parse(text_, aliases)
    if claim is not None and not claim.attribute.startswith("is"):
        return claim.subject, _DESCRIBED.get(claim.attribute, claim.attribute)
    tokens = [w for w in _tokens(text_) if w not in _DETERMINERS]
    owner, possessed = _split_possessive(tokens)
    noun = possessed or " ".join(owner)
    if not noun:
        return None
    attribute = _possessed_attribute(noun) if possessed else _POSSESSED.get(noun, "")
    if attribute == noun and noun not in _POSSESSED.values():
        attribute = ""
    if not attribute:
        for w in noun.split():
            if w in _LAPTOPS or w in _PHONES or w in _CARS:
                attribute = f"device:{_device({w})}"
            elif w in _DIET_WORDS:
                attribute = "diet"
    if not attribute:
        return None
    subject = _subject_key(owner if possessed else [], aliases or {})
    return subject, attribute


_DESCRIBED = {"eat": "diet", "live": "location", "work": "employer", "drive": "device:car"}
_COMPOUND = re.compile(r"\s*,?\s+(?:and|but|while)\s+(?:(?:now|also|then|still)\s+)?(\w+)\b")


def split_compound(clause: str) -> list[str]:
    """One clause per attribute: the subject is carried over to a second verb.

    "The user is engaged to Priya and teaches at Lakeside School" gives "The user is
    engaged to Priya" and "The user teaches at Lakeside School". A second verb without a
    complement of its own ("lives and works in Porto") or an "and" between values
    ("likes tea and coffee") is not cut.
    """
    tokens = _tokens(clause)
    at = _main_verb(tokens)
    if at is None:
        return [clause]
    for match in _COMPOUND.finditer(clause):
        left = clause[: match.start()].strip()
        right = clause[match.start(1) :].strip()
        left_tokens, right_tokens = _tokens(left), _tokens(right)
        if _main_verb(left_tokens) is None or len(left_tokens) <= at + 1:
            continue
        if len(right_tokens) < 2:
            continue
        verb = match.group(1).lower()
        if verb in VERB_FORMS and not verb.endswith("ing"):  # "... and teaches at X"
            subject = " ".join(clause.split()[: _subject_width(clause, at)])
            if subject:
                return [left, *split_compound(f"{subject} {right}")]
            continue
        own = _main_verb(right_tokens)  # "... and Farah's phone is a Pixel": a new subject
        if own is not None and own >= 1 and parse(right) is not None:
            return [left, *split_compound(right)]
    return [clause]


def _subject_width(clause: str, verb_at: int) -> int:
    """How many whitespace-separated words of ``clause`` come before its verb."""
    tokens = _tokens(clause)
    verb = tokens[verb_at]
    for i, raw in enumerate(clause.split()):
        if raw.lower().strip(",.;:") == verb or raw.lower().replace("’", "'").startswith(verb):
            words_before = clause.split()[:i]
            while words_before and words_before[-1].lower() in _AUX | _ADVERBS:
                words_before.pop()
            return len(words_before)
    return 0
