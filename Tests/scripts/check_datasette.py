#!/usr/bin/env python3
"""What Datasette shows for a storesync consumer database.

Usage: check_datasette.py DB.sqlite

Opens the file with Datasette's Python API (no server, no port) and checks,
through the same JSON API the web pages are built from:

  tables ..... every entity table is listed, with its row count, and the
               FTS shadow tables are hidden
  facet ...... `?_facet=genre` on podcasts returns a count per genre
  link ....... `?_labels=on` on episodes expands podcast_id into
               {value, label} with the podcast's name (a declared foreign key)
  search ..... `?_search=` on podcasts finds a row through podcasts_fts
  view ....... the `charts` view is listed and answers

Prints one line per finding (`tables: …`, `facet genre: …`, `link: …`,
`search …: …`) and exits 1 when a check fails, 2 when Datasette is missing.
"""
import asyncio
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


async def main(path):
    failures = []

    def check(condition, message):
        if not condition:
            failures.append(message)
            print("FAIL " + message)

    ds = Datasette([path])
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

    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1])))
