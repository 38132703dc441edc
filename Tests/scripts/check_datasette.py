#!/usr/bin/env python3
"""What Datasette shows for a storesync consumer database.

Usage: check_datasette.py DB.sqlite [METADATA.json]

Opens the file with Datasette's Python API (no server, no port) and checks,
through the same JSON API the web pages are built from:

  tables ..... every entity table is listed, with its row count, and the
               FTS shadow tables are hidden
  facet ...... `?_facet=genre` on podcasts returns a count per genre
  link ....... `?_labels=on` on episodes expands podcast_id into
               {value, label} with the podcast's name (a declared foreign key)
  search ..... `?_search=` on podcasts finds a row through podcasts_fts
  view ....... the `charts` view is listed and answers

With METADATA.json (the `sqlite` export's `metadata:` file), Datasette is
started with it, as `datasette DB.sqlite --metadata METADATA.json` does, and:

  metadata ... the index page shows its title; the podcasts page shows the
               table's description and its columns' meanings; podcasts is
               faceted by genre and sorted by last_changed_run, newest
               first, without being asked; each `_history` table it
               describes is listed and faceted by `_event`

Prints one line per finding (`tables: …`, `facet genre: …`, `link: …`,
`search …: …`) and exits 1 when a check fails, 2 when Datasette is missing.
"""
import asyncio
import html
import json
import os
import sys

try:
    from datasette.app import Datasette
except ImportError:
    print("datasette is not installed (python3 -m pip install datasette)")
    sys.exit(2)

ENTITY_TABLES = ["podcasts", "episodes", "songs", "albums", "artists", "movies", "apps", "audiobooks",
                 "ebooks", "music_videos", "genres", "chart_entries", "listings"]


async def get_json(ds, path):
    response = await ds.client.get(path)
    if response.status_code != 200:
        raise AssertionError(f"GET {path}: HTTP {response.status_code}: {response.text[:300]}")
    return response.json()


async def main(path, metadata_path=None):
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)
            print("FAIL " + message)

    metadata = None
    if metadata_path:
        with open(metadata_path, encoding="utf-8") as f:
            metadata = json.load(f)
    ds = Datasette([path], metadata=metadata)
    await ds.invoke_startup()
    name = os.path.splitext(os.path.basename(path))[0]

    database = await get_json(ds, f"/{name}.json")
    tables = {t["name"]: t for t in database["tables"]}
    visible = sorted(n for n, t in tables.items() if not t.get("hidden"))
    print("tables: " + ", ".join(f"{n} ({tables[n]['count']})" for n in visible))
    for table in ENTITY_TABLES + ["changes", "runs", "vendors"]:
        check(table in visible, f"table {table} is listed")
    check(not any(n.startswith("podcasts_fts") for n in visible), "FTS tables are hidden")
    check(tables.get("podcasts", {}).get("fts_table") == "podcasts_fts", "podcasts has podcasts_fts as its search table")
    views = sorted(v["name"] for v in database.get("views", []))
    print("views: " + ", ".join(views))
    check("charts" in views, "the charts view is listed")

    facets = await get_json(ds, f"/{name}/podcasts.json?_facet=genre&_shape=objects")
    genre = facets["facet_results"]["genre"]["results"]
    print("facet genre: " + ", ".join(f"{r['value']}={r['count']}" for r in genre))
    check(len(genre) > 0 and all(r["count"] > 0 for r in genre), "the genre facet counts podcasts")

    episodes = await get_json(ds, f"/{name}/episodes.json?_labels=on&_shape=objects&_sort=key")
    linked = [row["podcast_id"] for row in episodes["rows"] if isinstance(row["podcast_id"], dict)]
    if linked:
        print(f"link: episodes.podcast_id {linked[0]['value']} -> podcasts \"{linked[0]['label']}\"")
    check(len(linked) > 0, "episodes.podcast_id is expanded to a podcast's label")
    check(all(link["label"] for link in linked), "every expanded podcast_id has a label")

    term = os.environ.get("SEARCH_TERM", "laptops")
    found = await get_json(ds, f"/{name}/podcasts.json?_search={term}&_shape=objects")
    print(f"search {term}: " + ", ".join(f"{row['key']} {row['name']}" for row in found["rows"]))
    check(len(found["rows"]) > 0, f"_search={term} finds a podcast")

    charts = await get_json(ds, f"/{name}/charts.json?_shape=objects&_size=3")
    print("charts: " + ", ".join(f"#{row['rank']} {row['name']}" for row in charts["rows"]))
    check(len(charts["rows"]) > 0, "the charts view answers")

    if metadata:
        index = await ds.client.get("/")
        check(metadata["title"] in html.unescape(index.text), "the index page shows the metadata's title")
        described = metadata["databases"][name]["tables"]
        # Read as text: Jinja and Python escape a quote differently (&#39;, &#x27;).
        page = html.unescape((await ds.client.get(f"/{name}/podcasts")).text)
        check(described["podcasts"]["description"] in page, "the podcasts page shows its description")
        meanings = described["podcasts"]["columns"]
        shown = [column for column, meaning in meanings.items() if f"<dt>{column}</dt><dd>{meaning}</dd>" in page]
        print(f"metadata: {len(shown)} of {len(meanings)} podcasts column meanings shown")
        check(len(shown) == len(meanings), "the podcasts page shows every column's meaning")
        plain = await get_json(ds, f"/{name}/podcasts.json?_shape=objects&_size=1")
        check("genre" in plain.get("facet_results", {}), "podcasts is faceted by genre unasked")
        check(plain.get("human_description_en") == "sorted by last_changed_run descending",
              f"podcasts is sorted by last_changed_run, newest first: {plain.get('human_description_en')}")
        for table in sorted(t for t in described if t.endswith("_history")):
            check(table in visible, f"{table} is listed")
            versions = await get_json(ds, f"/{name}/{table}.json?_shape=objects&_size=1")
            check("_event" in versions.get("facet_results", {}), f"{table} is faceted by _event")

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        sys.exit(2)
    sys.exit(asyncio.run(main(*sys.argv[1:])))
