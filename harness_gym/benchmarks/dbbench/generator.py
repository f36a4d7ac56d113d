"""Seeded procedural DBBench tasks for the embedded default (no data download needed).

``generate_split(split, n)`` builds ``n`` tasks in the original standard split's type mix
(100 INSERT, 100 UPDATE, 17 each of other/counting/comparison/ranking, 8 each of the
four aggregations per 300). Each task has its own ``random.Random`` seeded from the
split name and index. Splits never share a task: every theme has a different table
name per split and its key entities come from split-disjoint word pools.

Tables carry what trips real models: names that need backticks (``Time/Retired``,
``Year of intro``), numbers stored as TEXT whose text order differs from their numeric
order (every ranking/MIN/MAX task differs when compared as text), and stored formats
(``4 Hours``, ``1,500``) that a mutation must keep. Reference SQL is portable between
SQLite and MySQL/MariaDB: backticked identifiers, ``col + 0`` for numbers, no ``||``.
Labels are computed by running the reference on SQLite through ``db.py``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.dbbench.db_sqlite import SQLiteDatabase
from harness_gym.benchmarks.dbbench.tasks import TASK_TYPES, DBTask

SPLITS = {"train": 1000, "valid": 100, "test": 300}
_SPLIT_INDEX = {"train": 0, "valid": 1, "test": 2}
# per 300, in TASK_TYPES order: 8 SELECT-like types, then INSERT, UPDATE
MIX = (17, 17, 17, 17, 8, 8, 8, 8, 100, 100)

FIRST = ("Alex", "Maria", "John", "Elena", "Tom", "Sara", "Luis", "Anna", "Omar", "Nina", "Paul", "Keiko",
         "Ivan", "Lena", "Marco", "Ruth", "Sven", "Aisha", "Diego", "Hana", "Felix", "Mira", "Yusuf", "Clara")
LAST = (  # split-disjoint: train, valid, test
    ("Smith", "Garcia", "Novak", "Berg", "Costa", "Klein", "Moreau", "Tanaka", "Silva", "Weber", "Olsen", "Rossi",
     "Kowalski", "Dubois", "Jensen", "Ortiz", "Meyer", "Lindqvist"),
    ("Hughes", "Petrov", "Sato", "Fischer", "Lopez", "Nagy", "Quinn", "Varga", "Mendes", "Holm", "Ueda", "Brandt"),
    ("Walsh", "Ramos", "Ito", "Keller", "Santos", "Horvat", "Murphy", "Bauer", "Castro", "Lund", "Reyes", "Stone"),
)
PLACE = (
    ("Riverton", "Ashford", "Millbrook", "Oakdale", "Westfield", "Brighton", "Kingsport", "Fairview", "Lakeside",
     "Stonebridge", "Elmwood", "Northgate", "Redhill", "Clearwater", "Greenvale", "Holloway", "Marston", "Pinecrest"),
    ("Avondale", "Bayview", "Cedarburg", "Dunmore", "Eastwick", "Foxton", "Galloway", "Hartwell", "Inverness Bay",
     "Jasper Creek", "Kingsmere", "Lowfield"),
    ("Glenrock", "Harwich", "Ironvale", "Juniper", "Kelston", "Larkfield", "Moorside", "Newbury", "Orchard Hill",
     "Portwell", "Queensbay", "Rosemoor"),
)
THING = ("Falcon", "Comet", "Harbor", "Summit", "Aurora", "Granite", "Willow", "Ember", "Nova", "Cascade",
         "Atlas", "Meridian", "Orion", "Sierra", "Tempest", "Zephyr")


@dataclass(frozen=True)
class Col:
    name: str
    kind: str  # key | cat | int | fmt | year | date
    spec: tuple = ()  # cat: choices; int/year: (lo, hi); fmt: (lo, hi, template)
    noun: str = ""  # how a question names the column, default: lowercased name


@dataclass(frozen=True)
class Theme:
    tables: tuple[str, str, str]  # train, valid, test
    key: str  # person | place | thing-place | thing
    entity: str  # what a row is, plural ("drivers")
    cols: tuple[Col, ...]
    suffixes: tuple[str, ...] = ("United", "City", "Rovers")  # for place keys


THEMES = (
    Theme(("Olympic Medal Table", "Medal Standings", "Games Medal Count"), "place", "nations", (
        Col("Nation", "key"), Col("Gold", "int", (0, 40)), Col("Silver", "int", (1, 120)),
        Col("Bronze", "int", (2, 150)), Col("Continent", "cat", ("Europe", "Asia", "Africa", "Americas"))), ("Republic", "Islands", "Federation")),
    Theme(("Grand Prix Results", "Race Classification", "Motor Race Results"), "person", "drivers", (
        Col("Driver", "key"), Col("Constructor", "cat", ("Ferrari", "Lotus", "Brabham", "McLaren", "Tyrrell")),
        Col("Laps", "int", (3, 160)), Col("Time/Retired", "cat", ("+1 Lap", "+2 Laps", "Engine", "Accident", "Gearbox")),
        Col("Grid", "int", (1, 26)))),
    Theme(("Filmography", "Film Credits", "Movie Roles"), "thing", "films", (
        Col("Title", "key"), Col("Year", "year", (1985, 2022)), Col("Role", "cat", ("Lead", "Supporting", "Cameo", "Voice")),
        Col("Box office (millions)", "int", (2, 900), "box office"), Col("Studio", "cat", ("Paramount", "Universal", "Warner", "Lionsgate")))),
    Theme(("Election Results", "District Elections", "House Races"), "person", "candidates", (
        Col("Candidate", "key"), Col("District", "cat", ("District 1", "District 2", "District 3", "District 4")),
        Col("Party", "cat", ("Democratic", "Republican", "Independent", "Green")),
        Col("First elected", "year", (1978, 2020)), Col("Votes (%)", "int", (4, 100), "vote share"))),
    Theme(("School Information", "County Schools", "District School List"), "place", "schools", (
        Col("School", "key"), Col("Type", "cat", ("Public", "Private", "Charter")), Col("Enrollment", "int", (80, 4000)),
        Col("Annual fee", "fmt", (900, 30000, "{:,}"), "annual fee"),
        Col("Year of intro", "year", (1890, 2015), "year of introduction"), Col("Grades", "cat", ("K-5", "6-8", "9-12", "K-12"))), ("High", "Academy", "Elementary")),
    Theme(("Product Inventory", "Warehouse Stock", "Store Inventory"), "thing", "products", (
        Col("Product", "key"), Col("Category", "cat", ("Hardware", "Garden", "Kitchen", "Office")),
        Col("Units in stock", "int", (0, 500), "units in stock"), Col("Unit price", "fmt", (2, 300, "${}.99")),
        Col("Supplier", "cat", ("Acme", "Globex", "Initech", "Umbrella")))),
    Theme(("Flight Schedule", "Departures Board", "Airline Routes"), "place", "destinations", (
        Col("Destination", "key"), Col("Flight No.", "fmt", (100, 999, "HG {}"), "flight number"),
        Col("Duration", "fmt", (1, 14, "{} Hours")), Col("Seats", "int", (40, 420)),
        Col("Aircraft", "cat", ("A320", "B737", "A350", "E190"))), ("International", "Regional", "Airfield")),
    Theme(("League Standings", "Football League Table", "Club Standings"), "place", "clubs", (
        Col("Club", "key"), Col("Played", "int", (10, 38)), Col("Wins", "int", (0, 30)), Col("Points", "int", (1, 95)),
        Col("Goal difference", "int", (1, 60)), Col("Division", "cat", ("North", "South", "East", "West"))), ("United", "Athletic", "Rovers", "Town")),
    Theme(("Music Chart History", "Singles Chart", "Top Songs"), "person", "artists", (
        Col("Artist", "key"), Col("Song", "cat", ("Blue Light", "Runaway", "Gold Dust", "Night Drive", "Paper Hearts")),
        Col("Weeks at No. 1", "int", (1, 16), "weeks at number one"), Col("Peak position", "int", (1, 100)),
        Col("Label", "cat", ("Island", "Columbia", "Motown", "Sub Pop")))),
    Theme(("Tall Buildings", "City Skyline", "Tallest Towers"), "thing-place", "buildings", (
        Col("Name", "key"), Col("Height (m)", "int", (45, 830), "height"), Col("Floors", "int", (8, 163)),
        Col("Year completed", "year", (1920, 2021)), Col("Use", "cat", ("Office", "Residential", "Hotel", "Mixed")))),
    Theme(("Locomotive Inventory", "Rolling Stock", "Heritage Locomotives"), "thing", "locomotives", (
        Col("Name", "key"), Col("Number", "int", (1, 900)), Col("Type", "cat", ("Class 20", "Class 37", "Class 47", "Class 55")),
        Col("Status", "cat", ("Operational", "Under Repair", "Stored", "Static Display")), Col("Year of intro", "year", (1950, 1990), "year of introduction"))),
    Theme(("Hospital Information", "Regional Hospitals", "Hospital Directory"), "place", "hospitals", (
        Col("Hospital", "key"), Col("# Beds", "int", (20, 1500), "number of beds"), Col("Rank", "int", (1, 60)),
        Col("Type", "cat", ("General", "Teaching", "Children's", "Rehabilitation")), Col("County", "cat", ("North", "South", "Central"))), ("General", "Memorial", "Infirmary")),
    Theme(("Race Schedule", "Endurance Calendar", "Sports Car Season"), "thing-place", "races", (
        Col("Race", "key"), Col("Length", "fmt", (2, 24, "{} Hours")), Col("Class", "cat", ("GT", "Prototype", "Touring")),
        Col("Circuit", "cat", ("Road Atlanta", "Sebring", "Watkins Glen", "Laguna Seca")), Col("Round", "int", (1, 14)))),
    Theme(("Player Stats", "Season Statistics", "Scoring Leaders"), "person", "players", (
        Col("Player", "key"), Col("Position", "cat", ("Forward", "Midfielder", "Defender", "Goalkeeper")),
        Col("Games played", "int", (1, 120), "games played"), Col("Goals", "int", (0, 110)), Col("Assists", "int", (0, 45)))),
)


def _entity(rng: random.Random, theme: Theme, split: int) -> str:
    if theme.key == "person":
        return f"{rng.choice(FIRST)} {rng.choice(LAST[split])}"
    if theme.key == "place":
        return f"{rng.choice(PLACE[split])} {rng.choice(theme.suffixes)}"
    if theme.key == "thing-place":
        return f"{rng.choice(PLACE[split])} {rng.choice(THING)}"
    return f"{rng.choice(THING)} {rng.choice(PLACE[split])}"


def _value(rng: random.Random, col: Col) -> tuple[str, str]:
    """(stored text, how a sentence says it)."""
    if col.kind == "cat":
        v = rng.choice(col.spec)
        return v, v
    if col.kind == "fmt":
        lo, hi, tmpl = col.spec
        n = rng.randint(lo, hi)
        stored = tmpl.format(n)
        if tmpl.startswith("{} "):  # '4 Hours' is said '4 hours'
            return stored, stored.lower()
        return stored, str(n) if "," in tmpl else stored  # '1,500' is said '1500'
    lo, hi = col.spec
    text = str(rng.randint(lo, hi))
    return text, text


def _q(v: str) -> str:
    return "'" + v.replace("'", "''") + "'"


def _b(c: str) -> str:
    return "`" + c + "`"


def _noun(col: Col) -> str:
    return col.noun or col.name.lower()


def _mix(n: int) -> list[str]:
    """Type sequence for n tasks: MIX scaled by largest remainder, in TASK_TYPES order."""
    exact = [m * n / 300 for m in MIX]
    counts = [int(x) for x in exact]
    for i in sorted(range(len(MIX)), key=lambda i: exact[i] - counts[i], reverse=True)[: n - sum(counts)]:
        counts[i] += 1
    return [t for t, c in zip(TASK_TYPES, counts, strict=True) for _ in range(c)]


class _Builder:
    def __init__(self, rng: random.Random, split: str, task_id: str, task_type: str) -> None:
        self.rng, self.task_id, self.task_type = rng, task_id, task_type
        self.theme = rng.choice(THEMES)
        self.table = self.theme.tables[_SPLIT_INDEX[split]]
        self.split = _SPLIT_INDEX[split]
        cols = self.theme.cols
        self.key = cols[0]
        n_rows = rng.randint(8, 24)
        keys: list[str] = []
        for _ in range(n_rows * 20):  # bounded: pools hold at least 36 keys per split
            k = _entity(rng, self.theme, self.split)
            if k.lower() not in {x.lower() for x in keys}:
                keys.append(k)
            if len(keys) == n_rows:
                break
        self.rows = [[k] + [_value(rng, c)[0] for c in cols[1:]] for k in keys]

    def col(self, *kinds: str) -> Col:
        return self.rng.choice([c for c in self.theme.cols[1:] if c.kind in kinds])

    def idx(self, col: Col) -> int:
        return self.theme.cols.index(col)

    def task(self, description: str, sql: str, label: tuple[str, ...]) -> DBTask:
        cols = tuple(c.name for c in self.theme.cols)
        return DBTask(
            task_id=self.task_id, task_type=self.task_type, description=description, table_name=self.table,
            columns=cols, rows=tuple(tuple(r) for r in self.rows), label=label, reference_sql=sql,
            add_description=f"The name of this table is {self.table}, and the headers of this table are {','.join(cols)}.",
            source="harness-gym-generator",
        )


def _differs_as_text(values: list[str], most: bool) -> bool:
    """Whether the text max (min) differs from the numeric one, so a text comparison fails."""
    pick = max if most else min
    return pick(values) != str(pick(int(v) for v in values))


def _build(b: _Builder) -> tuple[str, str] | None:
    """(description, reference SQL) for ``b.task_type``, or None to redraw."""
    rng, t, tb, key = b.rng, b.task_type, _b(b.table), b.key
    if t == "INSERT":
        vals = [_value(rng, c) for c in b.theme.cols[1:]]
        new = _entity(rng, b.theme, b.split)
        if any(r[0].lower() == new.lower() for r in b.rows):
            return None
        parts = ", ".join(f"{_noun(c)} {said}" for c, (_, said) in zip(b.theme.cols[1:], vals, strict=True))
        desc = rng.choice((f"Insert a new record into the '{b.table}' table for {new} with {parts}.",
                           f"Add {new} to the {b.table} table: {parts}."))
        names = ", ".join(_b(c.name) for c in b.theme.cols)
        return desc, f"INSERT INTO {tb} ({names}) VALUES ({', '.join(_q(v) for v in [new] + [s for s, _ in vals])})"
    row = rng.choice(b.rows)
    if t == "UPDATE":
        col = b.col("fmt", "cat", "int", "year")
        stored, said = _value(rng, col)
        if stored == row[b.idx(col)]:
            return None
        desc = rng.choice((f"Change the {_noun(col)} of {row[0]} to {said} in the {b.table} table.",
                           f"Update the {b.table} table so that {row[0]} has a {_noun(col)} of {said}."))
        return desc, f"UPDATE {tb} SET {_b(col.name)} = {_q(stored)} WHERE {_b(key.name)} = {_q(row[0])}"
    if t == "other":
        col = b.col("cat", "int", "fmt", "year")
        return (f"What is the {_noun(col)} of {row[0]}?",
                f"SELECT {_b(col.name)} FROM {tb} WHERE {_b(key.name)} = {_q(row[0])}")
    cat = b.col("cat")
    v = row[b.idx(cat)]
    where = f"{_b(cat.name)} = {_q(v)}"
    if t == "counting":
        return (f"How many {b.theme.entity} have a {_noun(cat)} of {v}?", f"SELECT COUNT(*) FROM {tb} WHERE {where}")
    num = b.col("int")
    values = [r[b.idx(num)] for r in b.rows]
    if t == "comparison":
        n = int(rng.choice(values))
        numeric = {r[0] for r in b.rows if int(r[b.idx(num)]) > n and r[b.idx(cat)] == v}
        textual = {r[0] for r in b.rows if r[b.idx(num)] > str(n) and r[b.idx(cat)] == v}
        if not numeric or numeric == textual:
            return None
        return (f"Which {b.theme.entity} have a {_noun(cat)} of {v} and a {_noun(num)} larger than {n}?",
                f"SELECT {_b(key.name)} FROM {tb} WHERE {where} AND {_b(num.name)} + 0 > {n}")
    most = t == "aggregation-MAX" or (t == "ranking" and rng.random() < 0.5)
    if t in ("ranking", "aggregation-MIN", "aggregation-MAX") and (
        not _differs_as_text(values, most) or len(set(values)) != len(values)
    ):
        return None  # the text order must give a different answer; no ties
    if t == "ranking":
        return (f"Which of the {b.theme.entity} has the {'highest' if most else 'lowest'} {_noun(num)}?",
                f"SELECT {_b(key.name)} FROM {tb} ORDER BY {_b(num.name)} + 0 {'DESC' if most else 'ASC'} LIMIT 1")
    if t in ("aggregation-MIN", "aggregation-MAX"):
        fn = t[-3:]
        word = "lowest" if fn == "MIN" else "highest"
        return f"What is the {word} {_noun(num)} among the {b.theme.entity}?", f"SELECT {fn}({_b(num.name)} + 0) FROM {tb}"
    group = [r for r in b.rows if r[b.idx(cat)] == v]
    if t == "aggregation-AVG":  # keep the mean exact so both engines print the same float
        extra = sum(int(r[b.idx(num)]) for r in group) % len(group)
        top = max(group, key=lambda r: int(r[b.idx(num)]))
        if int(top[b.idx(num)]) - extra < num.spec[0]:
            return None
        top[b.idx(num)] = str(int(top[b.idx(num)]) - extra)
        return (f"What is the average {_noun(num)} of {b.theme.entity} with a {_noun(cat)} of {v}?",
                f"SELECT AVG({_b(num.name)}) FROM {tb} WHERE {where}")
    return (f"What is the total {_noun(num)} of {b.theme.entity} with a {_noun(cat)} of {v}?",
            f"SELECT SUM({_b(num.name)}) FROM {tb} WHERE {where}")


def _label(task: DBTask, db: SQLiteDatabase) -> tuple[str, ...] | None:
    with db.create(task) as s:
        res = s.execute(task.reference_sql)
    if res.is_error:
        raise AssertionError(f"generated reference fails on SQLite: {task.reference_sql}: {res.text}")
    if task.is_mutation:
        return (task.reference_sql,)
    flat = tuple(str(v) for row in res.rows for v in row)
    return flat if flat and len(set(flat)) == len(flat) else None


def generate_task(split: str, index: int, task_type: str, db: SQLiteDatabase | None = None) -> DBTask:
    """The ``index``-th task of ``split`` with the given type (deterministic)."""
    db = db or SQLiteDatabase()
    for attempt in range(200):
        rng = random.Random(f"harness-gym/dbbench/{split}/{index}/{attempt}")
        b = _Builder(rng, split, f"gen-{split}:{index}", task_type)
        built = _build(b)
        if built is None:
            continue
        task = b.task(built[0], built[1], ())
        label = _label(task, db)
        if label is not None:
            return b.task(built[0], built[1], label)
    raise AssertionError(f"generator could not build a {task_type} task for {split}:{index}")


def generate_split(split: str, n: int | None = None) -> list[DBTask]:
    """``n`` tasks of ``split`` (train 1000, valid 100, test 300 by default) in the standard mix."""
    if split not in SPLITS:
        raise ConfigError(f"DBBench generated split must be one of {sorted(SPLITS)}, got {split!r}")
    n = SPLITS[split] if n is None else n
    if not isinstance(n, int) or n < 0:
        raise ConfigError(f"number of tasks must be a non-negative integer, got {n!r}")
    db = SQLiteDatabase()
    return [generate_task(split, i, t, db) for i, t in enumerate(_mix(n))]
