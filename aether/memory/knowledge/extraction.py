"""What a conversation turn holds: facts, entities and relations (docs/design.md, "Extraction").

One shape for both extractors: :class:`Extraction`, a pydantic model that is also the JSON
schema the LLM answers in (one structured call per batch of turns, see
:mod:`aether.memory.knowledge.learner`). Without an LLM, :func:`extract` finds deterministically:

- named people, places and organisations: capitalised spans that do not open a sentence,
  or that a known entity's name or alias matches; the word before a span types it
  (``in``/``to``/``from`` a place, ``at``/``for`` after a work verb an organisation);
- dates ("7 May", "May 7, 2023", "2023-05-07") and quantities with units ("16 TB");
- simple statements ("X is/has/likes/lives in/works at Y"): the sentence is a fact, with
  "I"/"my" resolved to the speaker and the verb agreeing with it ("I live in Lisbon" is
  "User lives in Lisbon"), and a relation from the subject to each entity the sentence
  names after its verb (and to its date).

A question ("Where do I live?", "Do you know Lisbon") states nothing: it gives no fact.
Names are kept without the punctuation around them (``Lisbon"`` is ``Lisbon``).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from aether.memory.knowledge.facts import VERB_FORMS
from aether.memory.retrieval.text import sentences

MAX_FACTS = 20
MAX_ENTITIES = 40
MAX_NAME = 120
ENTITY_TYPES = ("person", "place", "organisation", "date", "thing")


class Fact(BaseModel):
    """A durable fact, self-contained (names, not pronouns)."""

    statement: str = Field(min_length=3, max_length=500)
    type: str = Field(default="fact", pattern="^(fact|insight)$")


class EntityOut(BaseModel):
    """A named thing of the conversation."""

    name: str = Field(min_length=1, max_length=MAX_NAME)
    type: str = Field(default="thing", pattern="^(person|place|organisation|date|thing)$")
    aliases: list[str] = Field(default_factory=list, max_length=10)


class RelationOut(BaseModel):
    """``source`` -[type]-> ``target``, both entity names."""

    source: str = Field(min_length=1, max_length=MAX_NAME)
    type: str = Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")
    target: str = Field(min_length=1, max_length=MAX_NAME)


class Extraction(BaseModel):
    """Everything one extraction found (the LLM's JSON schema too)."""

    facts: list[Fact] = Field(default_factory=list, max_length=MAX_FACTS)
    entities: list[EntityOut] = Field(default_factory=list, max_length=MAX_ENTITIES)
    relations: list[RelationOut] = Field(default_factory=list, max_length=MAX_ENTITIES)

    def merged(self, other: Extraction) -> Extraction:
        """Both extractions' findings, in order, within the bounds."""
        return Extraction(
            facts=[*self.facts, *other.facts][:MAX_FACTS],
            entities=[*self.entities, *other.entities][:MAX_ENTITIES],
            relations=[*self.relations, *other.relations][:MAX_ENTITIES],
        )


_SPAN = re.compile(r"\b([A-Z][\w&'-]*(?:\s+(?:of\s+)?[A-Z][\w&'-]*)*)")
_MONTHS = "january february march april may june july august september october november december"
_MONTH = "|".join(m for m in _MONTHS.split()) + "|" + "|".join(m[:3] for m in _MONTHS.split())
_DATE = re.compile(
    rf"\b(\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTH})\b(?:,?\s+\d{{4}})?"
    rf"|(?:{_MONTH})\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?)",
    re.IGNORECASE,
)
_QUANTITY = re.compile(
    r"\b(\d+(?:[.,]\d+)?\s?(?:tb|gb|mb|kb|km|kg|g|m|cm|mm|lbs?|miles?|hours?|days?|weeks?"
    r"|months?|years?|kids?|children|dogs?|cats?|percent|%|dollars?|euros?|usd|eur))\b",
    re.IGNORECASE,
)
_VERB = re.compile(
    r"\b(is|are|was|has|have|had|likes?|loves?|lives?|lived|moved|works?|worked|went|goes"
    r"|visited|joined|married|met|owns?|bought|adopted|started|stud(?:y|ies|ied)|teach(?:es)?"
    r"|taught|drives?|runs?|eats?|uses?|used|switched|quit|left|prefers?|speaks?|plays?)\b"
    r"(\s+(?:in|at|to|for|with|from|on|into)\b)?",
    re.IGNORECASE,
)
_PLACE_CUES = {"in", "to", "from", "near", "into", "visited", "visit", "visiting"}
_ORG_CUES = {"at", "for", "joined"}
_OPENERS = frozenset(
    [
        "I",
        "The",
        "A",
        "An",
        "We",
        "He",
        "She",
        "They",
        "It",
        "My",
        "Our",
        "This",
        "That",
        "Yes",
        "No",
        "Oh",
        "Hey",
        "Hi",
        "Thanks",
        "Wow",
        "So",
        "And",
        "But",
        "Also",
        "Well",
        "Yesterday",
        "Today",
        "Tomorrow",
        "Last",
        "Next",
        "When",
        "What",
        "How",
        "Why",
        "Where",
        "Who",
        "Did",
        "Do",
        "Does",
        "Is",
        "Are",
        "Can",
        "Could",
        "Would",
        "Should",
        "Will",
        "Please",
        "Sure",
        "Maybe",
        "Great",
        "Nice",
        "Awesome",
        "Cool",
        "Congrats",
        "Sorry",
        "Good",
        "Thank",
        "Just",
        "Really",
        "Then",
        "Now",
        "Here",
        "There",
        "Let",
        "Let's",
        "That's",
        "It's",
        "I'm",
        "I've",
        "You",
        "You're",
        "Your",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Mr",
        "Mrs",
        "Ms",
        "Dr",
    ]
)


_CLAUSE = re.compile(
    r"\s*;\s*"  # a semicolon always ends a clause
    r"|\s*,?\s+\b(?:and|but|while|whereas)\s+(?=(?:I|I'm|I've|we|my|our|he|she|they|it|"
    r"his|her|their|the)\b|[A-Z][\w'-]*\s+(?:is|was|has|had|lives|lived|went|goes|works|"
    r"worked|loves|loved|likes|liked|moved|drives|drove|joined|bought|said)\b)"
    # "and"/"but" before a new subject (a name only when a verb of its own follows)
    r"|\s*,\s+(?=(?:I|I'm|I've|we|my|our|he|she|they|his|her|their)\b)",  # ", I live..."
)
_FILLER = re.compile(
    r"^(?:hello|hi|hey|hiya|yo|good (?:morning|afternoon|evening)|thanks|thank you|ok(?:ay)?"
    r"|so|well|oh|um+|uh+|anyway|btw|by the way|fyi|just so you know|guess what)\b"
    r"(?:\s+there\b)?[\s,!.:-]*",
    re.IGNORECASE,
)
_PLACE_VERBS = frozenset(
    {"lives", "live", "lived", "moved", "went", "goes", "visited", "live_in", "lives_in"}
)


def clauses(text: str) -> list[str]:
    """The clauses of ``text``, greetings and fillers dropped.

    Each sentence is cut at semicolons, at "and" / "but" before a new subject, and at a
    comma before a personal pronoun; a greeting or filler opening a clause ("Hello
    there,", "So,") is dropped.

    "Hello there, I live in Porto and my NAS has 16 TB" gives "I live in Porto" and
    "my NAS has 16 TB": two statements, each folded into beliefs on its own.
    """
    out: list[str] = []
    for sentence in sentences(text):
        for part in _CLAUSE.split(sentence):
            part = _FILLER.sub("", part.strip()).strip(" ,;")
            if part:
                out.append(part)
    return out


_QUESTION_OPENERS = frozenset(
    [
        "what",
        "where",
        "when",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "have",
        "has",
        "am",
    ]
)


def is_question(clause: str) -> bool:
    """Whether a clause asks rather than states ("Where do I live?", "Do you know X")."""
    stripped = clause.strip()
    if stripped.endswith("?"):
        return True
    first = re.match(r"[A-Za-z']+", stripped)
    return first is not None and first.group(0).lower() in _QUESTION_OPENERS


def stating(clause: str) -> bool:
    """Whether a clause states something: one of the verbs facts are made of, no question."""
    return _VERB.search(clause) is not None and not is_question(clause)


def clean_name(name: str) -> str:
    """A name without the quotes, brackets and punctuation around it (nor a possessive)."""
    cleaned = name.strip().strip("\"'`“”‘’«»()[],;:.!? ").strip()
    for possessive in ("'s", "’s"):
        cleaned = cleaned.removesuffix(possessive)
    return cleaned.strip("\"'`“”‘’ ")


def _common_noun_opening(sentence: str, match: re.Match[str], known: dict[str, str]) -> bool:
    """Whether the capitalised word opening a sentence is a common noun, not a name.

    "Server atlas runs...", "Invoice INV-7731 is...": the word is followed by a name or
    an identifier, then the verb; "Marta climbs..." is followed by its verb.
    """
    if match.start() > 0:
        return False
    first = match.group(1).split()[0]
    if first.lower() in known or first.endswith("'s"):
        return False
    after = [w.strip(",.;:") for w in sentence[match.start() + len(first) :].split()[:2]]
    if not after or after[0].lower() in VERB_FORMS:
        return False
    identifier = any(c.isdigit() for c in after[0])
    return identifier or (len(after) > 1 and after[1].lower() in VERB_FORMS)


def _span_type(name: str, before: str) -> str:
    words = before.lower().split()
    last = words[-1] if words else ""
    if last in ("a", "an", "the") or (name.isupper() and len(name) > 1):
        return "thing"  # "a Corolla", "the NAS": rarely a person
    if last in _ORG_CUES or (len(words) > 1 and words[-2] in ("works", "worked") and last == "at"):
        return "organisation"
    if last in _PLACE_CUES:
        return "place"
    return "person"


def _entities(sentence: str, known: dict[str, str]) -> list[EntityOut]:
    out: dict[str, EntityOut] = {}
    taken = [m.span() for m in _DATE.finditer(sentence)]
    taken += [m.span() for m in _QUANTITY.finditer(sentence)]
    for match in _SPAN.finditer(sentence):
        name = clean_name(match.group(1))
        if not name:
            continue
        if _common_noun_opening(sentence, match, known):
            name = " ".join(name.split()[1:])
            if not name:
                continue
        first = name.split()[0]
        if first in _OPENERS:
            name = name[len(first) :].strip()
            if not name:
                continue
        start = match.start() + match.group(1).index(name)
        if len(name) > MAX_NAME or any(a <= start < b for a, b in taken):
            continue  # part of a date or a quantity
        kind = known.get(name.lower()) or _span_type(name, sentence[:start])
        out.setdefault(name.lower(), EntityOut(name=name, type=kind))
    for match in _DATE.finditer(sentence):
        date = " ".join(match.group(1).split())
        out.setdefault(date.lower(), EntityOut(name=date, type="date"))
    return list(out.values())


_PHRASE_END = re.compile(
    r"\s+(?:on|in|at|with|as|for|about|from|to|because|and|but|when|since|last|yesterday"
    r"|now|today|again|too|already|anymore|these|this|every)\b"
    r"|[,;.!?]"
)


def _object_phrase(rest: str) -> str:
    """The noun phrase a verb takes: up to the next preposition, clause or date."""
    phrase = _PHRASE_END.split(rest)[0]
    phrase = re.sub(r"^(?:the|a|an|my|our|his|her|their)\s+", "", phrase.strip(), flags=re.I)
    return phrase.strip()[:MAX_NAME]


def extract(speaker: str, text: str, known: dict[str, str] | None = None) -> Extraction:
    """Deterministic findings in one turn of ``speaker`` (see the module docs).

    Args:
        speaker: who said it ("I" and "my" become this name); empty when unknown.
        text: the turn.
        known: lower-cased names and aliases of known entities -> their type.
    """
    known = known or {}
    facts: list[Fact] = []
    entities: dict[str, EntityOut] = {}
    relations: list[RelationOut] = []
    if speaker:
        entities[speaker.lower()] = EntityOut(
            name=speaker, type=known.get(speaker.lower(), "person")
        )
    for sentence in clauses(text):
        if len(sentence) < 6 or is_question(sentence):
            continue
        found = _entities(sentence, known)
        for e in found:
            entities.setdefault(e.name.lower(), e)
        verb = _VERB.search(sentence)
        if verb is None:
            continue
        subject_text = sentence[: verb.start()].strip()
        subject = _subject(subject_text, speaker, found)
        if subject is None:
            continue
        statement = _resolved(sentence, speaker)
        if len(statement) <= 500 and (found or _QUANTITY.search(sentence) or subject):
            facts.append(Fact(statement=statement))
        relation = _relation(verb.group(0), subject_text)
        after = sentence[verb.end() :]
        targets = [e for e in found if e.name.lower() != subject.lower() and e.name in after]
        if _place_verb(verb.group(0)):  # one lives in a place, never in a thing or a person
            targets = [e for e in targets if e.type in ("place", "organisation", "date")]
        phrase = _object_phrase(after)
        named = phrase[:1].isupper() or re.search(r"[A-Z]{2,}", phrase)
        if (
            phrase
            and named
            and not phrase[0].isdigit()
            and phrase.lower() not in {t.name.lower() for t in targets}
        ):
            inside = [t for t in targets if t.type != "date" and t.name in phrase]
            for t in inside:  # "LGBTQ" of "the LGBTQ support group": the group is the thing
                targets.remove(t)
                if t.name.lower() not in known and len(t.name.split()) < len(phrase.split()):
                    entities.pop(t.name.lower(), None)
            kind = inside[0].type if len(inside) == 1 and inside[0].name == phrase else "thing"
            entities.setdefault(phrase.lower(), EntityOut(name=phrase, type=kind))
            targets.insert(0, entities[phrase.lower()])
        for target in targets:
            rel = "on" if target.type == "date" else relation
            relations.append(RelationOut(source=subject, type=rel, target=target.name))
    return Extraction(
        facts=facts[:MAX_FACTS],
        entities=list(entities.values())[:MAX_ENTITIES],
        relations=relations[:MAX_ENTITIES],
    )


def _place_verb(verb: str) -> bool:
    """Whether a verb (with its preposition) says where someone is or goes."""
    words = verb.lower().split()
    return words[0] in _PLACE_VERBS or (len(words) > 1 and words[1] in ("in", "to", "into", "from"))


def _relation(verb: str, subject_text: str) -> str:
    """The relation a verb states: "my partner is Sam" -> ``partner``, else the verb."""
    words = subject_text.lower().split()
    if verb.lower() in ("is", "was") and len(words) > 1 and words[0] in ("my", "our"):
        role = "_".join(re.findall(r"[a-z0-9]+", " ".join(words[1:3])))
        if role and role[0].isalpha():
            return role[:64]
    return "_".join(verb.lower().split())


def _subject(text: str, speaker: str, found: list[EntityOut]) -> str | None:
    words = text.split()
    if not words:
        return None
    named = [e.name for e in found if e.type == "person" and e.name in text]
    if words[0].lower() in ("my", "our") and named:
        return named[-1]  # "My sister Maria lives in Berlin": Maria does
    if words[-1].lower() in ("i", "we") or words[0].lower() in ("i", "my"):
        return speaker or None
    for e in found:
        if e.type != "date" and e.name in text:
            return e.name
    return None


_IRREGULAR_THIRD = {"am": "is", "have": "has", "do": "does", "go": "goes", "be": "is"}
_NOT_VERBS = frozenset(
    ["also", "really", "just", "still", "never", "always", "often", "usually", "was", "will"]
)


def third_person(verb: str) -> str:
    """The verb as "he"/"she" says it: ``live`` -> ``lives``, ``have`` -> ``has``."""
    low = verb.lower()
    if low in _IRREGULAR_THIRD:
        return _IRREGULAR_THIRD[low]
    if low in _NOT_VERBS or low.endswith(("ed", "s")) or not low.isalpha():
        return verb
    if low.endswith(("sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _agreeing(match: re.Match[str], speaker: str) -> str:
    adverb, verb = match.group(1) or "", match.group(2)
    if verb.lower() in ("don't", "dont"):
        return f"{speaker} {adverb}doesn't"
    return f"{speaker} {adverb}{third_person(verb)}"


def _resolved(sentence: str, speaker: str) -> str:
    """The sentence with the speaker's "I", "me", "my" replaced by their name.

    The verb after "I" agrees with the name: "I live in Lisbon" -> "User lives in Lisbon".
    """
    if not speaker:
        return sentence
    out = re.sub(r"\bI'm\b", f"{speaker} is", sentence)
    out = re.sub(r"\bI've\b", f"{speaker} has", out)
    out = re.sub(r"\bI'd\b", f"{speaker} would", out)
    out = re.sub(r"\bI'll\b", f"{speaker} will", out)
    out = re.sub(
        r"\bI\s+((?:also|really|just|still|never|always|often|usually)\s+)?([a-z][a-z']*)\b",
        lambda m: _agreeing(m, speaker),
        out,
    )
    out = re.sub(r"\bI\b", speaker, out)
    out = re.sub(r"\b[Mm]y\b", f"{speaker}'s", out)
    return re.sub(r"\bme\b", speaker, out)
