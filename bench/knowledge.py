"""Facts kept, replaced and forgotten as the user means them; prints one JSON object.

No LLM; the local embedding model unless ``--embeddings none``. Every case runs in a fresh
namespace: it inscribes facts through the public operations (``memory_remember``,
``memory_log``, ``memory_replace``, ``memory_forget``, ``graph_alias``, ``erase``, and a
conversation the maintenance run learns from), then checks what ``memory_search`` returns:
what must be found and what must not (and, for learning, the active beliefs and the
graph's names). A case passes when every check does.

The cases are our own, generated from templates over pools of names, places and
identifiers (deterministic: the same cases every run), at least 30 per phenomenon:

- ``lookalike_identifiers``: two facts about identifiers that look alike (keys, invoices,
  e-mails, hosts, account numbers) both stay;
- ``shared_attribute``: two people (or servers) with the same attribute value both stay;
- ``paraphrased_change``: a changed fact in other words replaces the old one;
- ``negation``, ``temporal``: "no longer", "as of March" replace the old one;
- ``chains``: A, then B, then back to A: only the newest holds;
- ``compound``: a statement of two attributes keeps one when the other changes;
- ``replace_by_description``: ``memory_replace`` retires one attribute, not its neighbours;
- ``forget_by_subject``: ``memory_forget --about`` forgets one person, not their gym mates;
- ``erase_variants``: ``erase`` finds every spelling (and the graph's aliases), never a
  lookalike;
- ``learning``: a conversation teaches facts, not questions or the assistant's echo;
- ``broad_questions``: "which people did we talk about" finds the facts about people.

Usage: python bench/knowledge.py [--embeddings local|none] [--only PHENOMENON] [--failures]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import random
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (the repository first on sys.path)
import structlog

from aether.app import Aether
from aether.config import Settings
from aether.identity.bootstrap import default_identity_dir
from aether.operations import REGISTRY, Caller
from aether.server.embedded import EmbeddedRedis
from aether.store.client import connect

PEOPLE = [
    "Marta",
    "Ivo",
    "Ren",
    "Priya",
    "Tomas",
    "Ana",
    "Rui",
    "Lena",
    "Omar",
    "Sofia",
    "Kenji",
    "Amara",
    "Nils",
    "Yara",
    "Dario",
    "Ines",
    "Felix",
    "Hana",
    "Luca",
    "Mei",
    "Jonas",
    "Zara",
    "Pavel",
    "Noor",
    "Emil",
    "Leila",
    "Hugo",
    "Aiko",
    "Bruno",
    "Clara",
    "Diego",
    "Elif",
    "Farah",
    "Goran",
    "Ilse",
    "Joao",
    "Kira",
    "Lars",
    "Mila",
    "Nadia",
]
SURNAMES = [
    "Silva",
    "Novak",
    "Haddad",
    "Okafor",
    "Larsen",
    "Moreau",
    "Tanaka",
    "Costa",
    "Weber",
    "Ivanova",
]
CITIES = [
    "Lisbon",
    "Porto",
    "Leeds",
    "Manchester",
    "Berlin",
    "Madrid",
    "Oslo",
    "Lyon",
    "Braga",
    "Ghent",
    "Turin",
    "Krakow",
    "Bristol",
    "Utrecht",
    "Seville",
    "Graz",
    "Bergen",
    "Cork",
    "Malmo",
    "Bilbao",
]
COMPANIES = [
    "Halvard Bank",
    "Nimbus Robotics",
    "Globex",
    "Initech",
    "Umbrella Labs",
    "Vandelay Industries",
    "Stark Analytics",
    "Wayne Logistics",
    "Hooli",
    "Tyrell Systems",
    "Cyberdyne",
    "Soylent Foods",
    "Oscorp",
    "Kiln Studio",
    "Brightwater Energy",
]
SCHOOLS = [
    "Lakeside School",
    "Riverside Academy",
    "Hillcrest College",
    "Northgate School",
    "Oakwood Academy",
    "Elm Street School",
]
GYMS = ["Boulder Barn", "Crux Gym", "The Climbing Works", "Summit Wall", "Rock Hall"]
LAPTOPS = ["ThinkPad X1", "MacBook Air", "Dell XPS 13", "Framework 13", "Surface Laptop"]
PHONES = ["Pixel 8", "iPhone 15", "Galaxy S23", "Fairphone 5"]
MONTHS = ["March", "April", "May", "June", "September", "October"]


@dataclass
class Case:
    """One case: steps through the public operations, then checks."""

    phenomenon: str
    name: str
    steps: list[tuple[str, dict[str, Any]]]
    searches: list[tuple[str, list[str], list[str]]] = field(default_factory=list)
    """(query, texts that must be in a result, texts that must be in none)."""
    beliefs: tuple[list[str], list[str]] | None = None
    """Texts some active belief must hold, texts none may hold."""
    clean_entities: bool = False
    """No entity name keeps stray punctuation (quotes, brackets)."""


def remember(text: str) -> tuple[str, dict[str, Any]]:
    return ("memory_remember", {"content": text, "source": "user"})


def log_(text: str) -> tuple[str, dict[str, Any]]:
    return ("memory_log", {"content": text, "source": "user"})


def say(role: str, text: str) -> tuple[str, dict[str, Any]]:
    return ("chat", {"role": role, "content": text})


def rng(seed: str) -> random.Random:
    return random.Random(seed)


def code(r: random.Random, n: int, alphabet: str = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789") -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


# ----------------------------------------------------------------------- phenomena


def lookalike_identifiers() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"look{i}")
        kind = i % 6
        if kind == 0:
            a, b = r.choice([("production", "staging"), ("live", "test"), ("primary", "backup")])
            k1, k2 = f"pk_{a[:4]}_{code(r, 4)}", f"pk_{b[:4]}_{code(r, 4)}"
            f1, f2 = r.sample(["monthly", "weekly", "daily", "quarterly"], 2)
            steps = [
                remember(f"The {a} API key is {k1} and rotates {f1}."),
                remember(f"The {b} API key is {k2} and rotates {f2}."),
            ]
            checks = [(f"{a} API key", [k1.lower()], []), (f"{b} API key", [k2.lower()], [])]
        elif kind == 1:
            n = r.randint(1000, 9999)
            s1, s2 = r.sample(["disputed", "paid", "overdue", "cancelled", "pending"], 2)
            steps = [remember(f"Invoice INV-{n} is {s1}."), remember(f"Invoice INV-{n}B is {s2}.")]
            checks = [
                (f"invoice INV-{n}", [f"inv-{n} is {s1}"], []),
                (f"invoice INV-{n}B", [f"inv-{n}b is {s2}"], []),
            ]
        elif kind == 2:
            p = r.choice(PEOPLE).lower()
            uk, nz = f"{p}@kiln.co", f"{p}@kiln.co.nz"
            steps = [
                remember(f"The support address for Kiln UK is {uk}"),
                remember(f"The support address for Kiln NZ is {nz}"),
            ]
            checks = [("Kiln UK support address", [f"is {uk}"], []), ("Kiln NZ support", [nz], [])]
        elif kind == 3:
            n = r.randint(1, 9)
            ip1, ip2 = f"10.0.{n}.{r.randint(2, 250)}", f"10.0.{n + 1}.{r.randint(2, 250)}"
            steps = [
                remember(f"Server web-0{n} has IP {ip1}"),
                remember(f"Server web-0{n}1 has IP {ip2}"),
            ]
            checks = [(f"web-0{n} IP", [ip1], []), (f"web-0{n}1 IP", [ip2], [])]
        elif kind == 4:
            n = r.randint(1000, 9999)
            p1, p2 = r.sample(PEOPLE, 2)
            steps = [
                remember(f"Account {n} belongs to {p1}"),
                remember(f"Account {n}7 belongs to {p2}"),
            ]
            checks = [
                (f"account {n}", [f"{n} belongs to {p1.lower()}"], []),
                (f"account {n}7", [f"{n}7 belongs to {p2.lower()}"], []),
            ]
        else:
            p = r.choice(PEOPLE)
            w, h = f"{p.lower()}@{code(r, 5).lower()}.io", f"{p.lower()}.home@mail.org"
            steps = [remember(f"{p}'s work email is {w}"), remember(f"{p}'s personal email is {h}")]
            checks = [(f"{p} work email", [w], []), (f"{p} personal email", [h], [])]
        out.append(Case("lookalike_identifiers", f"look{i}", steps, checks))
    return out


def shared_attribute() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"share{i}")
        a, b = r.sample(PEOPLE, 2)
        kind = i % 6
        if kind == 0:
            v = r.choice(GYMS)
            sa, sb = f"{a} climbs at {v}", f"{b} climbs at {v}"
        elif kind == 1:
            v = r.choice(CITIES)
            sa, sb = f"{a} lives in {v}", f"{b} lives in {v}"
        elif kind == 2:
            v = r.choice(COMPANIES)
            sa, sb = f"{a} works at {v}", f"{b} works at {v}"
        elif kind == 3:
            v = r.choice(["a Tesla Model 3", "a Toyota Corolla", "a Honda Civic"])
            sa, sb = f"{a} drives {v}", f"{b} drives {v}"
        elif kind == 4:
            a, b = r.sample(["alpha", "beta", "gamma", "delta", "omega"], 2)
            v = r.choice(["Ubuntu 22.04", "Debian 12", "Alpine 3.19"])
            sa, sb = f"Server {a} runs {v}", f"Server {b} runs {v}"
        else:
            v = r.choice(["peanuts", "shellfish", "penicillin", "cats"])
            sa, sb = f"{a} is allergic to {v}", f"{b} is allergic to {v}"
        steps = [remember(sa), remember(sb)]
        checks = [(a, [sa.lower()], []), (b, [sb.lower()], [])]
        out.append(Case("shared_attribute", f"share{i}", steps, checks))
    return out


def paraphrased_change() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"para{i}")
        p = r.choice(PEOPLE)
        kind = i % 9
        if kind == 0:
            c1, c2 = r.sample(COMPANIES, 2)
            old, new = f"{p} works at {c1} as a data analyst", f"{p} joined {c2} last week"
            query, gone, kept = f"Where does {p} work?", c1.lower(), c2.lower()
        elif kind == 1:
            c1, c2 = r.sample(COMPANIES, 2)
            old = f"{p} works at {c1} as a data analyst"
            new = f"{p} left {c1} for a seed-stage startup called {c2}"
            query, gone, kept = f"{p} job", f"works at {c1.lower()}", c2.lower()
        elif kind == 2:
            x, y = r.sample(CITIES, 2)
            old, new = f"{p} lives in {x}", f"{p} moved to {y}"
            query, gone, kept = f"Where does {p} live?", f"lives in {x.lower()}", y.lower()
        elif kind == 3:
            x, y = r.sample(CITIES, 2)
            old, new = f"{p} lives in {x}", f"{p} relocated to {y} in the spring"
            query, gone, kept = f"{p} home city", f"lives in {x.lower()}", y.lower()
        elif kind == 4:
            l1, l2 = r.sample(LAPTOPS, 2)
            old, new = f"{p} uses a {l1} laptop", f"{p} switched to a {l2}"
            query, gone, kept = f"{p} laptop", l1.lower(), l2.lower()
        elif kind == 5:
            n1 = f"+351 91{r.randint(0, 9)} {r.randint(100, 999)} {r.randint(100, 999)}"
            n2 = f"+351 93{r.randint(0, 9)} {r.randint(100, 999)} {r.randint(100, 999)}"
            old, new = f"{p}'s phone number is {n1}", f"{p}'s new number is {n2}"
            query, gone, kept = f"{p} phone number", n1, n2
        elif kind == 6:
            s = r.choice(["web-01", "db-02", "cache-03", "api-04"])
            ip1, ip2 = f"10.1.{i}.{r.randint(2, 99)}", f"10.2.{i}.{r.randint(100, 250)}"
            old, new = f"Server {s} has IP {ip1}", f"Server {s}'s IP is now {ip2}"
            query, gone, kept = f"{s} IP address", ip1, ip2
        elif kind == 7:
            a1 = f"{r.randint(1, 99)} Rua Augusta"
            a2 = f"{r.randint(1, 99)} Baker Street"
            old, new = f"{p}'s address is {a1}", f"{p}'s new address is {a2}"
            query, gone, kept = f"{p} address", a1.lower(), a2.lower()
        else:
            ph1, ph2 = r.sample(PHONES, 2)
            old, new = f"{p}'s phone is a {ph1}", f"{p} bought a {ph2} phone"
            query, gone, kept = f"{p} phone", ph1.lower(), ph2.lower()
        steps = [remember(old), remember(new)]
        out.append(Case("paraphrased_change", f"para{i}", steps, [(query, [kept], [gone])]))
    return out


def negation() -> list[Case]:
    out = []
    pairs = [
        ("{p} eats meat", "{p} no longer eats meat", "{p} diet", "no longer"),
        ("{p} eats meat", "{p} stopped eating meat", "{p} eats meat", "stopped"),
        ("{p} eats meat", "{p} is vegetarian now", "{p} diet meat", "vegetarian"),
        ("{p} drinks coffee", "{p} doesn't drink coffee anymore", "{p} coffee", "doesn't"),
        ("{p} plays tennis", "{p} no longer plays tennis", "{p} tennis", "no longer"),
        ("{p} owns a car", "{p} no longer owns a car", "{p} car", "no longer"),
        ("{p} likes jazz", "{p} doesn't like jazz anymore", "{p} jazz", "doesn't"),
        ("{p} speaks German", "{p} does not speak German", "{p} German", "does not"),
        ("{p} is married", "{p} is not married anymore", "{p} married", "not married"),
    ]
    for i in range(36):
        r = rng(f"neg{i}")
        p = r.choice(PEOPLE)
        old, new, query, marker = (t.format(p=p) for t in pairs[i % len(pairs)])
        steps = [remember(old), remember(new)]
        checks = [(query, [marker.lower()], [f"[{old.lower()}]"])]
        out.append(Case("negation", f"neg{i}", steps, checks))
    return out


def temporal() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"time{i}")
        p = r.choice(PEOPLE)
        month = r.choice(MONTHS)
        kind = i % 6
        if kind == 0:
            team = r.choice(["design", "sales", "platform", "support"])
            x, y = r.sample(CITIES, 2)
            old, new = f"The {team} office is in {x}", f"As of {month} the {team} office is in {y}"
            query, gone, kept = f"{team} office", f"office is in {x.lower()}", y.lower()
        elif kind == 1:
            c1, c2 = r.sample(COMPANIES, 2)
            old, new = f"{p} works at {c1}", f"Since {month}, {p} works at {c2}"
            query, gone, kept = f"{p} employer", f"works at {c1.lower()}", c2.lower()
        elif kind == 2:
            x, y = r.sample(CITIES, 2)
            old, new = f"{p} lives in {x}", f"From next month {p} lives in {y}"
            query, gone, kept = f"{p} lives", f"lives in {x.lower()}", y.lower()
        elif kind == 3:
            t1, t2 = r.sample(["9:30", "10:00", "11:15", "14:00"], 2)
            old, new = f"The standup is at {t1}", f"Starting Monday the standup is at {t2}"
            query, gone, kept = "standup time", f"is at {t1}", t2
        elif kind == 4:
            c1, c2 = r.sample(COMPANIES, 2)
            old, new = f"{p} works at {c1}", f"{p} works at {c2} as of {month}"
            query, gone, kept = f"{p} works", f"works at {c1.lower()}", c2.lower()
        else:
            x, y = r.sample(CITIES, 2)
            old = f"The warehouse is in {x}"
            new = f"Effective {month} 1 the warehouse is in {y}"
            query, gone, kept = "warehouse location", f"is in {x.lower()}", y.lower()
        steps = [remember(old), remember(new)]
        out.append(Case("temporal", f"time{i}", steps, [(query, [kept], [gone])]))
    return out


def chains() -> list[Case]:
    out = []
    for i in range(33):
        r = rng(f"chain{i}")
        p = r.choice(PEOPLE)
        kind = i % 3
        if kind == 0:
            a, b = r.sample(LAPTOPS, 2)
            steps = [
                remember(f"{p} uses a {a} laptop"),
                remember(f"{p} switched to a {b}"),
                remember(f"{p} switched back to the {a}"),
            ]
            query, kept, gone = f"{p} laptop", [f"back to the {a.lower()}"], [b.lower()]
        elif kind == 1:
            x, y = r.sample(CITIES, 2)
            steps = [
                remember(f"{p} lives in {x}"),
                remember(f"{p} moved to {y}"),
                remember(f"{p} moved back to {x}"),
            ]
            query, kept, gone = f"Where does {p} live", [f"back to {x.lower()}"], [y.lower()]
        else:
            c1, c2 = r.sample(COMPANIES, 2)
            steps = [
                remember(f"{p} works at {c1}"),
                remember(f"{p} joined {c2}"),
                remember(f"{p} is back at {c1} as an engineer"),
            ]
            query, kept, gone = f"{p} work", [f"back at {c1.lower()}"], [c2.lower()]
        out.append(Case("chains", f"chain{i}", steps, [(query, kept, gone)]))
    return out


def compound() -> list[Case]:
    out = []
    for i in range(33):
        r = rng(f"comp{i}")
        p, q = r.sample(PEOPLE, 2)
        kind = i % 3
        if kind == 0:
            s1, s2 = r.sample(SCHOOLS, 2)
            steps = [
                remember(f"{p} is engaged to {q} and teaches at {s1}"),
                remember(f"{p} now teaches at {s2}"),
            ]
            checks = [
                (f"Who is {p} engaged to?", [f"engaged to {q.lower()}"], []),
                (f"Where does {p} teach?", [s2.lower()], [s1.lower()]),
            ]
        elif kind == 1:
            x = r.choice(CITIES)
            c1, c2 = r.sample(COMPANIES, 2)
            steps = [
                remember(f"{p} lives in {x} and works at {c1}"),
                remember(f"{p} works at {c2} now"),
            ]
            checks = [
                (f"Where does {p} live?", [f"lives in {x.lower()}"], []),
                (f"{p} employer", [c2.lower()], [c1.lower()]),
            ]
        else:
            lap = r.choice(LAPTOPS)
            ph1, ph2 = r.sample(PHONES, 2)
            steps = [
                remember(f"{p}'s laptop is a {lap} and {p}'s phone is a {ph1}"),
                remember(f"{p} switched to a {ph2} phone"),
            ]
            checks = [
                (f"{p} laptop", [lap.lower()], []),
                (f"{p} phone", [ph2.lower()], [ph1.lower()]),
            ]
        out.append(Case("compound", f"comp{i}", steps, checks))
    return out


def replace_by_description() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"repl{i}")
        p, q = r.sample(PEOPLE, 2)
        c1, c2 = r.sample(COMPANIES, 2)
        x, y = r.sample(CITIES, 2)
        base = [
            remember(f"{p} works at {c1}"),
            remember(f"{p} lives in {x}"),
            remember(f"{q} works at {c1}"),
            log_(f"{p} said {c1} is hiring again"),
        ]
        kind = i % 4
        if kind == 0:
            target, content = f"{p}'s employer", f"{p} works at {c2}"
            checks = [
                (f"{p} work", [c2.lower()], [f"{p.lower()} works at {c1.lower()}"]),
                (f"{p} lives", [f"lives in {x.lower()}"], []),
                (f"{q} work", [f"{q.lower()} works at {c1.lower()}"], []),
            ]
        elif kind == 1:
            target, content = f"where {p} works", f"{p} is a nurse at {c2}"
            checks = [
                (f"{p} job", [c2.lower()], [f"{p.lower()} works at {c1.lower()}"]),
                (f"{q} works", [f"{q.lower()} works at {c1.lower()}"], []),
            ]
        elif kind == 2:
            target, content = f"where {p} lives", f"{p} lives in {y}"
            checks = [
                (f"Where does {p} live?", [f"lives in {y.lower()}"], [f"lives in {x.lower()}"]),
                (f"{p} work", [f"{p.lower()} works at {c1.lower()}"], []),
            ]
        else:
            target, content = f"{p}'s home city", f"{p} is based in {y}"
            checks = [
                (f"{p} city", [f"based in {y.lower()}"], [f"lives in {x.lower()}"]),
                (f"{q} employer", [f"{q.lower()} works at {c1.lower()}"], []),
            ]
        steps = [*base, ("memory_replace", {"target": target, "content": content})]
        out.append(Case("replace_by_description", f"repl{i}", steps, checks))
    return out


def forget_by_subject() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"forget{i}")
        a, b, c = r.sample(PEOPLE, 3)
        gym = r.choice(GYMS)
        surname = r.choice(SURNAMES)
        steps = [
            remember(f"{a} climbs at {gym}"),
            remember(f"{b} climbs at {gym}"),
            remember(f"{a}'s phone number is +44 7700 900{r.randint(100, 999)}"),
            log_(f"{c} climbs at {gym} on Tuesdays"),
        ]
        kind = i % 3
        about = a
        if kind == 1:
            steps.append(log_(f"{a} prefers morning sessions"))
        elif kind == 2:
            steps.insert(0, ("graph_alias", {"name": f"{a} {surname}", "alias": a}))
            about = f"{a} {surname}"
        steps.append(("memory_forget", {"about": about}))
        checks = [
            (f"{a}", [], [f"{a.lower()} climbs", f"{a.lower()}'s phone", f"{a.lower()} prefers"]),
            (f"Who climbs at {gym}?", [f"{b.lower()} climbs", f"{c.lower()} climbs"], []),
        ]
        out.append(Case("forget_by_subject", f"forget{i}", steps, checks))
    return out


def erase_variants() -> list[Case]:
    out = []
    for i in range(36):
        r = rng(f"erase{i}")
        kind = i % 9
        alias: tuple[str, str] | None = None
        if kind == 0:
            u = str(uuid.UUID(int=r.getrandbits(128)))
            stored, asked = f"Session {u} leaked", u.replace("-", "")
            keep = f"Session {u[:-1]}f{u[-1:]}0 is fine"
        elif kind == 1:
            u = uuid.UUID(int=r.getrandbits(128)).hex
            stored, asked = f"Token {u} was revoked", str(uuid.UUID(u)).upper()
            keep = f"Token {u}ab was issued"
        elif kind == 2:
            digits = f"{r.randint(100, 999)}{r.randint(100, 999)}{r.randint(100, 999)}"
            stored = f"Call the landlord on +351 {digits[:3]} {digits[3:6]} {digits[6:]}"
            asked, keep = f"+351.{digits[:3]}.{digits[3:6]}.{digits[6:]}", f"Fax +351 {digits}7"
        elif kind == 3:
            p = r.choice(PEOPLE).lower()
            stored, asked = f"Mail {p}@kiln.co about the lease", f"{p.upper()}@KILN.CO"
            keep = f"Mail {p}@kiln.co.nz about the lease"
        elif kind == 4:
            h = f"{r.choice(PEOPLE).lower()}_{code(r, 3).lower()}"
            stored, asked, keep = f"Follow @{h} for updates", h, f"Follow @{h}x for updates"
        elif kind == 5:
            n = r.randint(1000, 9999)
            stored, asked, keep = f"Invoice INV-{n} is disputed", f"inv {n}", f"INV-{n}B is paid"
        elif kind == 6:
            name = r.choice(["José Álvarez", "Zoë Brontë", "Łukasz Wójcik", "Søren Kierkegård"])
            plain = name.replace("ł", "l").replace("Ł", "L").replace("ø", "o")
            import unicodedata

            plain = "".join(
                c for c in unicodedata.normalize("NFD", plain) if unicodedata.category(c) != "Mn"
            )
            stored, asked, keep = f"{name} filed a complaint", plain, "Jose filed nothing"
        elif kind == 7:
            stored = "Ольга Иванова asked for a refund"
            asked = "everything about customer Olga Ivanova"
            keep = "Olga Petrova asked for a refund"
            alias = ("Olga Ivanova", "Ольга Иванова")
        else:
            n = r.randint(1000, 9999)
            stored, asked, keep = (
                f"Card 4111 1111 1111 {n} expired",
                f"4111-1111-1111-{n}",
                (f"Card 4111 1111 1111 {n}1 is new"),
            )
        steps: list[tuple[str, dict[str, Any]]] = []
        if alias:
            steps.append(("graph_alias", {"name": alias[0], "alias": alias[1]}))
        steps += [log_(stored), log_(keep), ("erase", {"text": asked})]
        words = " ".join(w for w in stored.split()[:1] + keep.split()[:1])
        checks = [(words, [f"[{keep.lower()}]"], [f"[{stored.lower()}]"])]
        out.append(Case("erase_variants", f"erase{i}", steps, checks))
    return out


def learning() -> list[Case]:
    out = []
    for i in range(33):
        r = rng(f"learn{i}")
        x, y = r.sample(CITIES, 2)
        c = r.choice(COMPANIES)
        band = r.choice(["Radiohead", "Bicep", "Khruangbin", "Portishead"])
        kind = i % 3
        if kind == 0:
            turns = [
                say("user", f"I live in {x}"),
                say("assistant", f"Nice, {x} is lovely. Do you also work in {y}?"),
                say("user", "Where do I live?"),
                say("assistant", f"You live in {x}."),
            ]
            must, never = [f"user lives in {x.lower()}"], ["?", "where do", y.lower()]
        elif kind == 1:
            turns = [
                say("user", f'My favourite band is "{band}" these days.'),
                say("assistant", f"So you work at {c}, right?"),
                say("user", "What is my favourite band?"),
            ]
            must, never = [band.lower()], ["?", c.lower(), "what is"]
        else:
            turns = [
                say("user", f"I work at {c} and I live in {x}"),
                say("assistant", f"Got it: you work at {c} and live in {y}."),
                say("user", "Do I work at Globex?"),
                say("tool", f"Office badge issued for {c} HQ in {x}"),
            ]
            must, never = [f"user works at {c.lower()}", f"lives in {x.lower()}"], ["?", y.lower()]
        steps = [*turns, ("learn", {})]
        query = f"Where does the user live? {x}"
        out.append(
            Case(
                "learning",
                f"learn{i}",
                steps,
                [(query, [], ["?"])],
                beliefs=(must, never),
                clean_entities=True,
            )
        )
    return out


def broad_questions() -> list[Case]:
    out = []
    for i in range(33):
        r = rng(f"broad{i}")
        a, b, c = r.sample(PEOPLE, 3)
        x = r.choice(CITIES)
        s1, s2 = r.sample(["atlas", "boreas", "cygnus", "draco", "eridanus", "fornax"], 2)
        kind = i % 3
        facts = [
            f"{a} lives in {x}",
            f"{b} works at {r.choice(COMPANIES)}",
            f"{c} climbs at {r.choice(GYMS)}",
            f"Server {s1} runs Postgres 16",
            f"Server {s2} hosts the build cache",
            "The quarterly report is due on Friday",
        ]
        steps = [remember(f) for f in facts]
        if kind == 0:
            checks = [("Which people did we talk about?", [a.lower(), b.lower(), c.lower()], [])]
        elif kind == 1:
            checks = [("What servers do we run?", [s1, s2], [])]
        else:
            checks = [("Who have I mentioned so far?", [a.lower(), b.lower()], [])]
        out.append(Case("broad_questions", f"broad{i}", steps, checks))
    return out


PHENOMENA = {
    "lookalike_identifiers": lookalike_identifiers,
    "shared_attribute": shared_attribute,
    "paraphrased_change": paraphrased_change,
    "negation": negation,
    "temporal": temporal,
    "chains": chains,
    "compound": compound,
    "replace_by_description": replace_by_description,
    "forget_by_subject": forget_by_subject,
    "erase_variants": erase_variants,
    "learning": learning,
    "broad_questions": broad_questions,
}


# ----------------------------------------------------------------------- running


async def run_case(base: Settings, client: Any, case: Case) -> list[str]:
    """The case's failed checks (empty: it passed)."""
    settings = base.model_copy(update={"namespace": f"kb{uuid.uuid4().hex[:10]}"})
    wired = Aether(settings, client, actor="bench")
    await wired.ready()
    caller = Caller(actor="cli", session="kb")
    failures: list[str] = []
    try:
        await _play(wired, caller, case, failures)
    except Exception as e:  # noqa: BLE001  (an operation that fails fails its case)
        failures.append(f"error: {type(e).__name__}: {e}")
    finally:
        await wired.aclose()
    return failures


async def _play(wired: Aether, caller: Caller, case: Case, failures: list[str]) -> None:
    runtime = None
    for name, args in case.steps:
        if name == "chat":
            if runtime is None:
                runtime = wired.runtime("kb")
                await runtime.identity.ensure(default_identity_dir())
            await runtime.observe(args["role"], args["content"])
        elif name == "learn":
            op = REGISTRY["maintenance_run"]
            await op(wired, caller, op.parse({}))
        else:
            op = REGISTRY[name]
            await op(wired, caller, op.parse(args))
    search = REGISTRY["memory_search"]
    for query, must, never in case.searches:
        found = await search(wired, caller, search.parse({"query": query, "limit": 10}))
        texts = [f"[{str(row.get('content', '')).lower().rstrip('.')}]" for row in found.results]
        joined = " ".join(texts)
        failures += [f"{query!r}: missing {m!r}" for m in must if m not in joined]
        failures += [f"{query!r}: still finds {n!r}" for n in never if n in joined]
    if case.beliefs is not None:
        listing = REGISTRY["belief_list"]
        held = await listing(wired, caller, listing.parse({}))
        statements = " | ".join(str(b["content"]).lower() for b in held.beliefs)
        must, never = case.beliefs
        failures += [
            f"beliefs: missing {m!r} in {statements!r}" for m in must if m not in statements
        ]
        failures += [f"beliefs: holds {n!r}: {statements!r}" for n in never if n in statements]
    if case.clean_entities:
        names = await _entity_names(wired)
        dirty = [n for n in names if any(ch in n for ch in "\"'`“”()[]")]
        failures += [f"entity name with punctuation: {n!r}" for n in dirty]


async def _entity_names(wired: Aether) -> list[str]:
    prefix = wired.keys.entity("")
    out = []
    async for key in wired.client.scan_iter(match=prefix + "*", count=500):
        name = await wired.client.hget(key, "name")
        if name:
            out.append(name.decode())
    return out


async def run(embeddings: str, only: str | None, show: bool) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="aether-knowledge-"))
    base = Settings(home=home, embedding={"provider": embeddings})  # type: ignore[arg-type]
    client = await connect(base)
    results: dict[str, dict[str, Any]] = {}
    failed: dict[str, list[str]] = {}
    started = time.perf_counter()
    try:
        for phenomenon, make in PHENOMENA.items():
            if only and phenomenon != only:
                continue
            cases = make()
            passed = 0
            for case in cases:
                problems = await run_case(base, client, case)
                passed += not problems
                if problems:
                    failed[case.name] = problems
            results[phenomenon] = {
                "cases": len(cases),
                "passed": passed,
                "pass_rate": round(passed / len(cases), 3),
            }
    finally:
        await client.aclose()
        EmbeddedRedis(base).stop()
    total = sum(r["cases"] for r in results.values())
    passed = sum(r["passed"] for r in results.values())
    out: dict[str, Any] = {
        "embeddings": embeddings,
        "llm": None,
        "cases": total,
        "overall": round(passed / max(1, total), 3),
        "lowest": min((r["pass_rate"] for r in results.values()), default=0.0),
        "phenomena": results,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if show:
        out["failures"] = failed
    return out


def main() -> None:
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--embeddings", default="local", choices=["local", "none"])
    parser.add_argument("--only", choices=sorted(PHENOMENA))
    parser.add_argument("--failures", action="store_true", help="list each failed check")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.embeddings, args.only, args.failures)), indent=2))


if __name__ == "__main__":
    main()
