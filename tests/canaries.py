"""Planted secrets ("canaries") of many kinds in every field of every layer of a real store, a hermes-agent home
and a MemPalace palace.

`plant(store, per_field, kinds=KINDS)` writes them through the store's own API and returns what it planted; a built
site must hold none of them (`found_in(site_dir, canaries)`), in any spelling an output may give them
(as is, HTML-escaped, JSON-escaped, URL-encoded, slugged). A new field of a record gets covered by adding
it to `FIELDS`; a new output is covered because the whole site is read.

`hermes_canaries(kinds)` / `palace_canaries(kinds)` give the same for every field of a hermes home
(`HERMES_FIELDS`) and of a palace (`PALACE_FIELDS`) as content for `tests.homes` to write (so other records can
be added before the one write); `plant_hermes(root, kinds)` / `plant_palace(root, kinds)` write it at once.
`kinds` is any dict of kind -> (rng -> (secret, text carrying it)), e.g. a blind set's `KINDS`.
"""

from __future__ import annotations

import html
import json
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from memwiki.errors import CapacityError
from memwiki.source import Memory
from memwiki.store.layout import LAYER_PATHS
from memwiki.store.store import Store
from tests.homes import (
    Drawer,
    Fact,
    HermesContent,
    HermesMessage,
    HermesSession,
    Made,
    PalaceContent,
    PalaceEntity,
    tool_call,
)

Rng = random.Random
Kinds = dict[str, Callable[[Rng], tuple[str, str]]]  # kind -> rng -> (secret, text that carries it)


def _word(rng: Rng, n: int, alphabet: str = string.ascii_letters + string.digits) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _digits(rng: Rng, n: int) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _luhn_complete(prefix: str) -> str:
    total = 0
    for i, c in enumerate(reversed(prefix + "0")):
        d = int(c)
        total += d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2)
    return prefix + str((10 - total % 10) % 10)


def _grouped(number: str) -> str:
    return " ".join(number[i : i + 4] for i in range(0, len(number), 4))


def _id_number(rng: Rng) -> str:
    body = (
        "110105" + str(rng.randint(1950, 2005)) + f"{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}" + _digits(rng, 3)
    )
    weights = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return body + "10X98765432"[sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11]


# kind -> (secret, text that carries it): the secret is what must not reach the site
KINDS: Kinds = {
    "openai key": lambda r: (s := "sk-proj-" + _word(r, 40), f"OpenAI key {s}"),
    "aws key": lambda r: (s := "AKIA" + _word(r, 16, string.ascii_uppercase + string.digits), f"aws id {s}"),
    "github token": lambda r: (s := "ghp_" + _word(r, 36), f"gh {s}"),
    "slack token": lambda r: (s := f"xoxb-{_digits(r, 12)}-{_digits(r, 13)}-{_word(r, 24)}", f"slack {s}"),
    "stripe key": lambda r: (s := "sk_live_" + _word(r, 24), f"stripe {s}"),
    "google key": lambda r: (s := "AIza" + _word(r, 35, string.ascii_letters + string.digits + "_-"), f"maps {s}"),
    "jwt": lambda r: (s := f"eyJ{_word(r, 30)}.eyJ{_word(r, 40)}.{_word(r, 43)}", f"session jwt {s}"),
    "private key": lambda r: (
        s := "\n".join(_word(r, 64, string.ascii_letters + string.digits + "+/") for _ in range(3)),
        f"-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----",
    ),
    "password (English)": lambda r: (s := _word(r, 10) + "!9", f"my password is {s} for the NAS"),
    "password (Chinese)": lambda r: (s := _word(r, 9) + "#7", f"路由器的密码是{s}，别告诉别人"),
    "password (口令)": lambda r: (s := _word(r, 8) + "@1", f"VPN 口令：{s}"),
    "postgres url": lambda r: (s := f"{_word(r, 6)}:{_word(r, 12)}", f"postgres://{s}@db.example.com:5432/app"),
    "email": lambda r: (
        s := f"{_word(r, 8, string.ascii_lowercase)}.{_word(r, 5, string.ascii_lowercase)}@mailbox.org",
        f"mail {s} later",
    ),
    "phone (China)": lambda r: (s := "13" + _digits(r, 9), f"手机 {s}"),
    "phone (international)": lambda r: (s := f"+44 20 {_digits(r, 4)} {_digits(r, 4)}", f"call {s} today"),
    "private ipv4": lambda r: (
        s := f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
        f"host at {s} ok",
    ),
    "private ipv6": lambda r: (
        s := f"fd{_word(r, 2, '0123456789abcdef')}:{_word(r, 4, '0123456789abcdef')}::"
        f"{_word(r, 4, '0123456789abcdef')}",
        f"ula {s} here",
    ),
    "internal host": lambda r: (s := f"{_word(r, 8, string.ascii_lowercase)}.corp.internal", f"see {s} now"),
    "bearer token": lambda r: (s := _word(r, 32), f"Authorization: Bearer {s}"),
    "sendgrid key": lambda r: (s := f"SG.{_word(r, 22)}.{_word(r, 43)}", f"mail api {s}"),
    "gitlab token": lambda r: (s := "glpat-" + _word(r, 20), f"gitlab {s}"),
    "card number": lambda r: (s := _luhn_complete("4" + _digits(r, 14)), f"card {s} exp 12/29"),
    "id number": lambda r: (s := _id_number(r), f"身份证号 {s}"),
    "url secret": lambda r: (s := _word(r, 24), f"https://api.example.com/v1?access_token={s}&x=1"),
    "redis url": lambda r: (s := _word(r, 14), f"cache at redis://:{s}@cache.example.com:6379/0"),
    "basic auth": lambda r: (s := _word(r, 12, string.ascii_letters) + "==", f"Authorization: Basic {s}"),
    "webhook": lambda r: (s := f"{_digits(r, 18)}/{_word(r, 40)}", f"https://discord.com/api/webhooks/{s}"),
    "stripe webhook secret": lambda r: (s := "whsec_" + _word(r, 32), f"webhook signing {s}"),
    "card number (UnionPay)": lambda r: (s := _grouped(_luhn_complete("6222" + _digits(r, 14))), f"银行卡 {s}"),
}


@dataclass(frozen=True)
class Canary:
    kind: str
    field: str
    secret: str
    tag: str = ""  # the word planted beside it (e.g. "c12"): where it was put, when the secret alone says little


# every field a canary goes into: (layer, field)
FIELDS = (
    "persona.text",
    "hot.memory.text",
    "hot.user.text",
    "sink.text",
    "memory.text",
    "memory.id",
    "memory.wing",
    "memory.room",
    "memory.session_id",
    "memory.message_id",
    "memory.meta.value",
    "memory.meta.key",
    "memory.meta.context",
    "entity.name",
    "entity.type",
    "entity.properties",
    "triple.predicate",
    "triple.object",
    "triple.source",
    "session.id",
    "session.title",
    "session.source",
    "message.content",
    "message.tool_name",
    "wiki.title",
    "wiki.aliases",
    "wiki.tags",
    "wiki.body",
    "wiki.file_name",
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def plant(store: Store, per_field: int = 1, seed: int = 11, kinds: Kinds = KINDS) -> list[Canary]:
    """Plant `per_field` canaries of every kind of `kinds` into every field of `store` (through its own API;
    a persona over the store's cap is written to SOUL.md as a hand edit would, and read whole)."""
    rng = random.Random(seed)
    planted: list[Canary] = []
    persona, hot_user, memories, wiki = [], [], [], []
    n = 0
    for kind, make in kinds.items():
        for _ in range(per_field):
            for field in FIELDS:
                secret, text = make(rng)
                n += 1
                flat = _one_line(text) if field not in ("persona.text", "memory.text", "wiki.body") else text
                tag = f"c{n}"
                planted.append(Canary(kind, field, secret, tag))
                if field == "persona.text":
                    persona.append(f"- Note {tag}: {text}")
                elif field in ("hot.memory.text", "sink.text"):
                    category = "[env] " if field == "sink.text" else "[pitfall] "
                    store.remember(f"{category}{tag} {flat}", "memory")
                elif field == "hot.user.text":
                    hot_user.append(f"{tag} {flat}")
                elif field.startswith("memory."):
                    memories.append(_memory(field, tag, flat, text))
                elif field.startswith("entity."):
                    name = f"Entity {tag} {flat}" if field == "entity.name" else f"Entity {tag}"
                    etype = flat if field == "entity.type" else "service"
                    props = {"note": flat} if field == "entity.properties" else {}
                    store.graph.add_entity(name, etype, props)
                    store.graph.add_triple(name, "relates to", f"Thing {tag}")
                elif field.startswith("triple."):
                    pred = f"pred {flat}" if field == "triple.predicate" else "uses"
                    obj = f"Object {tag} {flat}" if field == "triple.object" else f"Object {tag}"
                    src = flat if field == "triple.source" else None
                    store.graph.add_triple(f"Subject {tag}", pred, obj, source_file=src)
                elif field.startswith("session.") or field.startswith("message."):
                    sid = f"s-{tag}-{flat}" if field == "session.id" else f"s-{tag}"
                    title = f"Talk {tag} {flat}" if field == "session.title" else f"Talk {tag}"
                    source = flat if field == "session.source" else "cli"
                    store.sessions.add_session(sid, title=title, source=source)
                    content = f"Turn {tag}: {text}" if field == "message.content" else f"Turn {tag}"
                    tool = flat if field == "message.tool_name" else ""
                    store.sessions.add_message(sid, "tool" if tool else "user", content, tool_name=tool)
                else:
                    wiki.append((field, tag, flat, text))
    set_persona(store, "I am a careful assistant.\n\n" + "\n".join(persona) + "\n")
    for line in hot_user:
        store.remember(line, "user")
    store.semantic.add(memories)
    for field, tag, flat, text in wiki:
        _wiki_page(store, field, tag, flat, text)
    return planted


def set_persona(store: Store, text: str) -> None:
    """The store's SOUL.md: through `set_persona`, or over its cap written as a hand edit (the store reads it
    whole, with a warning)."""
    try:
        store.set_persona(text)
    except CapacityError:
        (store.root / LAYER_PATHS["persona"]).write_text(text, encoding="utf-8")


def _memory(field: str, tag: str, flat: str, text: str) -> Memory:
    base = {"id": f"m-{tag}", "text": f"Memory {tag}.", "category": "technical", "wing": "", "room": ""}
    meta: dict[str, object] = {}
    if field == "memory.text":
        base["text"] = f"Memory {tag}: {text}"
    elif field == "memory.id":
        base["id"] = f"m-{tag}-{flat}"
    elif field in ("memory.wing", "memory.room"):
        base["wing"], base["room"] = ("w " + flat, "r") if field == "memory.wing" else ("w", "r " + flat)
    elif field == "memory.meta.value":
        meta["note"] = flat
    elif field == "memory.meta.key":
        meta[flat] = "x"
    elif field == "memory.meta.context":
        meta["context"] = flat
    extra = {}
    if field == "memory.session_id":
        extra["session_id"] = f"s-{flat}"
    if field == "memory.message_id":
        extra["message_id"] = flat
    return Memory(meta=meta, **base, **extra)


def _wiki_page(store: Store, field: str, tag: str, flat: str, text: str) -> None:
    title = f"Page {tag} {flat}" if field == "wiki.title" else f"Page {tag}"
    front = {"title": title}
    if field == "wiki.aliases":
        front["aliases"] = [f"alias {flat}"]
    if field == "wiki.tags":
        front["tags"] = [flat]
    body = f"Body of [[Page {tag}]].\n\n" + (text if field == "wiki.body" else "Nothing here.") + "\n"
    name = f"page-{tag}-{flat}" if field == "wiki.file_name" else f"page-{tag}"
    safe = "".join("-" if c in "/\\\0\n\r" else c for c in name)[:150]  # what a file system takes
    store.wiki_dir.mkdir(parents=True, exist_ok=True)
    (store.wiki_dir / f"{safe}.md").write_text(
        "---\n" + "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in front.items()) + "\n---\n\n" + body,
        encoding="utf-8",
    )


# every field of a hermes-agent home a canary goes into (the session's model is not shown, so not planted)
HERMES_FIELDS = (
    "hermes.soul",
    "hermes.memory",
    "hermes.user",
    "hermes.session.title",
    "hermes.session.source",
    "hermes.message.user",
    "hermes.message.assistant",
    "hermes.message.tool",
    "hermes.tool_call.arguments",
)

# every field of a MemPalace palace a canary goes into
PALACE_FIELDS = (
    "palace.drawer.text",
    "palace.drawer.wing",
    "palace.drawer.room",
    "palace.drawer.source_file",
    "palace.entity.name",
    "palace.entity.type",
    "palace.entity.properties",
    "palace.triple.predicate",
    "palace.triple.object",
)


def _draws(
    kinds: Kinds, fields: tuple[str, ...], per_field: int, seed: int, prefix: str
) -> list[tuple[str, dict[str, tuple[str, str]], list[Canary]]]:
    """Per kind and repetition: a tag, field -> (secret, text), and the canaries those are."""
    rng = random.Random(seed)
    out = []
    for kind, make in kinds.items():
        for _ in range(per_field):
            drawn = {field: make(rng) for field in fields}
            tag = f"{prefix}{len(out) + 1}"
            out.append((tag, drawn, [Canary(kind, field, secret, tag) for field, (secret, _) in drawn.items()]))
    return out


def hermes_canaries(kinds: Kinds = KINDS, per_field: int = 1, seed: int = 12) -> tuple[HermesContent, list[Canary]]:
    """Canaries of every kind in every field of `HERMES_FIELDS`, as content for `tests.homes.make_hermes_home`.

    Per kind: a SOUL.md line, a MEMORY.md and a USER.md entry, and one session whose title and source carry
    one each, with a user message, an assistant message, an assistant tool call (the text inside quoted JSON
    arguments: escaped quotes) and the tool's JSON result carrying one each."""
    content = HermesContent(soul="# Soul\n\nI am a careful assistant.\n")
    planted: list[Canary] = []
    soul = []
    for tag, drawn, canaries in _draws(kinds, HERMES_FIELDS, per_field, seed, "h"):
        planted += canaries
        text = {field: t for field, (_, t) in drawn.items()}
        soul.append(f"- Note {tag}: {text['hermes.soul']}")
        content.memory_entries.append(f"[pitfall] {tag} {text['hermes.memory']}")
        content.user_entries.append(f"{tag} {text['hermes.user']}")
        call = f"call_{tag}"
        arguments = {"cwd": f"/home/me/{tag}", "command": f'echo "{text["hermes.tool_call.arguments"]}" >> notes.txt'}
        content.sessions.append(
            HermesSession(
                id=f"h-{tag}",
                title=f"Talk {tag} {_one_line(text['hermes.session.title'])}",
                source=_one_line(text["hermes.session.source"]),
                messages=[
                    HermesMessage("user", f"Turn {tag}: {text['hermes.message.user']}"),
                    HermesMessage("assistant", f"Noted {tag}: {text['hermes.message.assistant']}"),
                    HermesMessage("assistant", None, tool_calls=[tool_call("terminal", arguments, call)]),
                    HermesMessage(
                        "tool",
                        json.dumps({"output": f"{tag}: {text['hermes.message.tool']}", "code": 0}, ensure_ascii=False),
                        tool_name="terminal",
                        tool_call_id=call,
                    ),
                ],
            )
        )
    content.soul = (content.soul or "") + "\n" + "\n".join(soul) + "\n"
    return content, planted


def palace_canaries(kinds: Kinds = KINDS, per_field: int = 1, seed: int = 13) -> tuple[PalaceContent, list[Canary]]:
    """Canaries of every kind in every field of `PALACE_FIELDS`, as content for `tests.homes.make_palace`.

    Per kind: a drawer's text, wing, room and source file; an entity's name, type and properties (each entity
    in a fact, so it is drawn); a fact's predicate (MemPalace lower-cases it, spaces as `_`) and object."""
    content = PalaceContent()
    planted: list[Canary] = []
    for tag, drawn, canaries in _draws(kinds, PALACE_FIELDS, per_field, seed, "p"):
        planted += canaries
        text = {field: t for field, (_, t) in drawn.items()}
        flat = {field: _one_line(t) for field, t in text.items()}
        content.drawers += [
            Drawer(f"Drawer {tag}: {text['palace.drawer.text']}"),
            Drawer(f"Drawer {tag} wing.", wing=f"w {flat['palace.drawer.wing']}"),
            Drawer(f"Drawer {tag} room.", room=f"r {flat['palace.drawer.room']}"),
            Drawer(f"Drawer {tag} file.", source_file=f"/home/me/notes/{tag} {flat['palace.drawer.source_file']}.md"),
        ]
        entities = [
            PalaceEntity(f"Entity {tag} {flat['palace.entity.name']}", "service"),
            PalaceEntity(f"Entity {tag} t", flat["palace.entity.type"]),
            PalaceEntity(f"Entity {tag} p", "service", {"note": flat["palace.entity.properties"]}),
        ]
        content.entities += entities
        content.facts += [Fact(e.name, "relates to", f"Thing {tag}") for e in entities]
        content.facts += [
            Fact(f"Subject {tag}", f"pred {flat['palace.triple.predicate']}", f"Object {tag}", "2026-01-01"),
            Fact(f"Subject {tag}", "uses", f"Object {tag} {flat['palace.triple.object']}", "2026-01-01"),
        ]
    return content, planted


def plant_hermes(root: Path, kinds: Kinds = KINDS, per_field: int = 1, seed: int = 12) -> tuple[Made, list[Canary]]:
    """A hermes-agent home in `root` with `hermes_canaries(kinds)` in it."""
    content, planted = hermes_canaries(kinds, per_field, seed)
    return content.make(root), planted


def plant_palace(root: Path, kinds: Kinds = KINDS, per_field: int = 1, seed: int = 13) -> tuple[Made, list[Canary]]:
    """A MemPalace palace in `root/palace` with `palace_canaries(kinds)` in it."""
    content, planted = palace_canaries(kinds, per_field, seed)
    return content.make(root), planted


def spellings(secret: str) -> set[str]:
    """The forms an output may give a secret in: as is, HTML-escaped, JSON-escaped, URL-encoded, slugged; for a
    multi-line secret, each of its lines."""
    from memwiki.site.model.concept_index import slugify

    forms = {secret, html.escape(secret), json.dumps(secret)[1:-1], quote(secret), quote(secret, safe="")}
    slug = slugify(secret)
    if len(slug) >= 10:
        forms.add(slug)
    if "\n" in secret:
        forms |= {line for line in secret.splitlines() if len(line) >= 16}
    return {f for f in forms if len(f) >= 6}


def found_in(site_dir: Path, canaries: list[Canary]) -> list[tuple[Canary, str]]:
    """The canaries found anywhere in `site_dir`, with the file they were found in."""
    texts = []
    for path in sorted(Path(site_dir).rglob("*")):
        if path.is_file():
            texts.append((path.relative_to(site_dir).as_posix(), path.read_bytes().decode("utf-8", "replace")))
    found = []
    for canary in canaries:
        forms = spellings(canary.secret)
        for rel, text in texts:
            if any(f in text for f in forms):
                found.append((canary, rel))
                break
    return found
