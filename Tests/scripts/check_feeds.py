#!/usr/bin/env python3
"""Check that real feed readers show our feeds' text exactly as it was written.

usage: check_feeds.py [--expect EXPECT.json] [--allow-extra] FILE...

Every FILE is parsed as its readers would parse it:
  RSS 2.0 ........ feedparser
  podcast RSS .... feedparser and podcastparser (RSS with the itunes: namespace)
  Atom 1.0 ....... feedparser
  OPML 2.0 ....... xml.etree (strict XML) and listparser when it is installed

Without --expect, only structure is checked: the file parses without error
(feedparser's `bozo` flag stays 0), is of the expected kind, and every item has
an id and a title (every OPML rss outline a text and an xmlUrl).

EXPECT.json holds the original text, keyed by file name (the FILE's base name or
its path as given):

  {"files": {
     "feed.xml": {
       "format": "rss" | "podcast" | "atom" | "opml",      (optional; detected)
       "feed":  {"title": "...", "description": "..."},     (optional, each key optional)
       "items": [{"id": "guid or atom:id", "title": "...", "description": "..."}, ...],
       "outlines": [{"group": "Genre" or ["Outer", "Inner"] or null, "title": "...", "xmlUrl": "...",
                     "htmlUrl": "..." (optional)}, ...]     (OPML)
     }}}

"items" may also be an object {id: {"title": ..., "description": ...}}; a list
also fixes the order. Every listed item must be in the feed, and (unless
--allow-extra) every item of the feed must be listed.

What "the reader shows" means (this is where exactness is defined):
  * text a reader treats as plain text (feedparser's type text/plain, Atom
    type="text", podcastparser's `description`) is shown character for character;
  * text a reader treats as HTML (feedparser's text/html, podcastparser's
    `description_html`) is rendered the way a browser lays it out: character
    references decoded, tags removed, <br> and block elements are line breaks,
    and every other run of ASCII white space (including raw line breaks) is one
    space;
  * titles are shown on one line: runs of white space are one space.
The original is compared after the same white-space rule of the display, with
leading and trailing white space trimmed (readers trim; it is invisible), and
without the characters XML 1.0 cannot carry at all (U+0000-U+0008, U+000B,
U+000C, U+000E-U+001F, U+FFFE, U+FFFF), which the writers drop. Nothing else is
normalised: `<Live>`, `&`, `a < b`, `]]>`, quotes, emoji and line breaks must
all come out as written.

Prints one line per failure and ends with "N passed, M failed". Exit status:
0 all passed, 1 a check failed, 2 usage error or missing module.
"""

import argparse
import io
import json
import os
import re
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

try:
    import feedparser
except ImportError:  # pragma: no cover - reported in main
    feedparser = None
try:
    import podcastparser
except ImportError:  # pragma: no cover
    podcastparser = None
try:
    import listparser
except ImportError:
    listparser = None

ITUNES_NS = "http://www.itunes.com/dtds/podcast-1.0.dtd"
ATOM_NS = "http://www.w3.org/2005/Atom"

# --- display model ---------------------------------------------------------

_NOT_XML_CHAR = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")
# Elements a browser lays out as blocks (a line break before and after).
_BLOCKS = {"p", "div", "li", "ul", "ol", "blockquote", "pre", "h1", "h2", "h3", "h4", "h5", "h6",
           "tr", "table", "section", "article", "header", "footer", "dl", "dt", "dd", "hr"}


def xml_chars(text):
    """The text as an XML 1.0 document can carry it."""
    return _NOT_XML_CHAR.sub("", text)


class _HTMLText(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts = []

    def _break(self):
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")

    def handle_starttag(self, tag, attrs):
        if tag == "br":
            self.parts.append("\n")
        elif tag in _BLOCKS:
            self._break()

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in _BLOCKS:
            self._break()

    def handle_data(self, data):
        self.parts.append(_HTML_SPACE.sub(" ", data))


def html_display(html):
    """What a browser shows for an HTML fragment, as text."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    return _trim_lines("".join(parser.parts))


def _trim_lines(text):
    return re.sub(r" *\n *", "\n", text).strip(" \n")


def expected_as_html(text):
    """The original as a browser shows it when the writer encoded it as HTML."""
    text = re.sub(r"\r\n|\r", "\n", xml_chars(text))
    text = re.sub(r"[ \t\f]+", " ", text)
    return _trim_lines(text)


def expected_as_plain(text):
    return xml_chars(text).strip()


def one_line(text):
    return " ".join(text.split())


def is_html_type(content_type):
    return content_type in ("text/html", "application/xhtml+xml", "html", "xhtml")


def shown(value, content_type):
    """(display, expected-transform) for a value of the given type."""
    if is_html_type(content_type):
        return html_display(value), expected_as_html
    return value.strip(), expected_as_plain


# --- bookkeeping -------------------------------------------------------------

class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self):
        self.passed += 1

    def fail(self, where, message):
        self.failed += 1
        print(f"FAIL {where}: {message}")

    def equal(self, where, what, expected, actual):
        if expected == actual:
            self.ok()
        else:
            self.fail(where, f"{what} shows {actual!r}, written {expected!r}")


def detect_format(data):
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        return None, f"not well-formed XML: {error}"
    tag = root.tag
    if tag == "rss":
        return ("podcast" if ITUNES_NS.encode() in data else "rss"), None
    if tag == f"{{{ATOM_NS}}}feed":
        return "atom", None
    if tag == "opml":
        return "opml", None
    return None, f"unknown root element {tag!r}"


def normalise_items(items):
    """[(id, {title, description})] from a list or an object."""
    if items is None:
        return None
    if isinstance(items, dict):
        return [(key, value) for key, value in items.items()]
    return [(entry["id"], entry) for entry in items]


# --- feeds ---------------------------------------------------------------------

def compare_item(report, where, reader, expected, title, title_type, description, description_type):
    if "title" in expected:
        if title is None:
            report.fail(where, f"{reader}: no title")
        else:
            display, transform = shown(title, title_type)
            report.equal(where, f"{reader} title ({title_type})", one_line(transform(expected["title"])), one_line(display))
    if "description" in expected:
        if description is None:
            if expected_as_plain(expected["description"]):
                report.fail(where, f"{reader}: no description")
            else:
                report.ok()
        else:
            display, transform = shown(description, description_type)
            report.equal(where, f"{reader} description ({description_type})", transform(expected["description"]), display)


def check_with_feedparser(report, name, data, fmt, expect, allow_extra):
    parsed = feedparser.parse(data)
    if parsed.bozo:
        report.fail(name, f"feedparser: not well-formed: {parsed.bozo_exception}")
        return
    want_version = "atom10" if fmt == "atom" else "rss20"
    report.equal(name, "feedparser version", want_version, parsed.version)

    feed_expect = expect.get("feed") or {}
    if feed_expect:
        feed = parsed.feed
        title_detail = feed.get("title_detail") or {}
        sub_detail = feed.get("subtitle_detail") or {}
        compare_item(report, f"{name} <feed>", "feedparser", feed_expect,
                     feed.get("title"), title_detail.get("type", "text/plain"),
                     feed.get("subtitle"), sub_detail.get("type", "text/plain"))

    entries = parsed.entries
    by_id = {}
    for index, entry in enumerate(entries):
        entry_id = entry.get("id")
        if not entry_id:
            report.fail(f"{name} item {index + 1}", "feedparser: no guid/id")
            continue
        if entry_id in by_id:
            report.fail(f"{name} item {index + 1}", f"feedparser: duplicate id {entry_id!r}")
        by_id[entry_id] = entry
        if "title" not in entry and "summary" not in entry:
            report.fail(f"{name} item {entry_id!r}", "feedparser: neither title nor description")

    items = normalise_items(expect.get("items"))
    if items is None:
        report.ok()
        return
    check_membership(report, name, "feedparser", [e.get("id") for e in entries], items, allow_extra,
                     ordered=isinstance(expect.get("items"), list))
    for item_id, item_expect in items:
        entry = by_id.get(item_id)
        if entry is None:
            continue
        title_detail = entry.get("title_detail") or {}
        if fmt == "atom" and entry.get("content"):
            content = entry.content[0]
            description, description_type = content.get("value"), content.get("type", "text/plain")
        else:
            detail = entry.get("summary_detail") or {}
            description, description_type = entry.get("summary"), detail.get("type", "text/plain")
        compare_item(report, f"{name} {item_id!r}", "feedparser", item_expect,
                     entry.get("title"), title_detail.get("type", "text/plain"), description, description_type)


def check_with_podcastparser(report, name, data, expect, allow_extra):
    try:
        parsed = podcastparser.parse("https://example.invalid/" + name, io.BytesIO(data))
    except Exception as error:  # FeedParseError and SAX errors
        report.fail(name, f"podcastparser: {error}")
        return
    report.ok()

    feed_expect = expect.get("feed") or {}
    if "title" in feed_expect:
        report.equal(f"{name} <channel>", "podcastparser title",
                     one_line(expected_as_plain(feed_expect["title"])), parsed.get("title", ""))
    if "description" in feed_expect:
        # podcastparser shows a channel description as plain text, always.
        report.equal(f"{name} <channel>", "podcastparser description",
                     expected_as_plain(podcastparser.squash_whitespace_not_nl(feed_expect["description"])),
                     parsed.get("description", ""))

    episodes = parsed.get("episodes", [])
    items = normalise_items(expect.get("items"))
    if items is None:
        return
    check_membership(report, name, "podcastparser", [e.get("guid") for e in episodes], items, allow_extra,
                     ordered=False)  # podcastparser sorts episodes by date
    by_guid = {e.get("guid"): e for e in episodes}
    for item_id, item_expect in items:
        episode = by_guid.get(item_id)
        if episode is None:
            continue
        where = f"{name} {item_id!r}"
        if "title" in item_expect:
            report.equal(where, "podcastparser title", one_line(expected_as_plain(item_expect["title"])),
                         one_line(episode.get("title", "")))
        if "description" in item_expect:
            html = episode.get("description_html")
            if html:
                # gPodder renders description_html when there is one.
                report.equal(where, "podcastparser description_html (rendered)",
                             expected_as_html(item_expect["description"]), html_display(html))
            else:
                # Otherwise it shows `description` as plain text (with its own space folding).
                wanted = podcastparser.squash_whitespace_not_nl(expected_as_plain(item_expect["description"]))
                report.equal(where, "podcastparser description (plain text)", wanted, episode.get("description", ""))


def check_membership(report, name, reader, found_ids, items, allow_extra, ordered):
    wanted = [item_id for item_id, _ in items]
    missing = [i for i in wanted if i not in found_ids]
    for item_id in missing:
        report.fail(f"{name} {item_id!r}", f"{reader}: item not found (ids seen: {found_ids!r})")
    extra = [i for i in found_ids if i not in wanted]
    if extra and not allow_extra:
        report.fail(name, f"{reader}: items not in the expectations: {extra!r}")
    if ordered and not missing and not extra:
        report.equal(name, f"{reader} item order", wanted, list(found_ids))
    elif not missing and (allow_extra or not extra):
        report.ok()


# --- OPML ------------------------------------------------------------------------

def check_opml(report, name, data, expect):
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        report.fail(name, f"not well-formed XML: {error}")
        return
    report.equal(name, "opml version", "2.0", root.get("version"))
    head, body = root.find("head"), root.find("body")
    if head is None or body is None:
        report.fail(name, "missing <head> or <body>")
        return
    title = head.findtext("title")
    date = head.findtext("dateCreated")
    if date is not None:
        from email.utils import parsedate_to_datetime
        try:
            parsedate_to_datetime(date)
            report.ok()
        except (TypeError, ValueError):
            report.fail(name, f"dateCreated is not an RFC 822 date: {date!r}")

    outlines = []

    def walk(node, path):
        for outline in node.findall("outline"):
            if outline.get("type") == "rss":
                outlines.append({"group": path, "text": outline.get("text"), "title": outline.get("title"),
                                 "xmlUrl": outline.get("xmlUrl"), "htmlUrl": outline.get("htmlUrl")})
            else:
                walk(outline, path + [outline.get("text")])

    walk(body, [])
    for index, outline in enumerate(outlines):
        if not outline["text"] or not outline["xmlUrl"]:
            report.fail(f"{name} outline {index + 1}", f"rss outline without text or xmlUrl: {outline!r}")

    if listparser is not None:
        parsed = listparser.parse(data.decode("utf-8"))
        if parsed.bozo:
            report.fail(name, f"listparser: {parsed.bozo_exception}")
        else:
            # What an importer sees: each feed's URL, title and folder.
            report.equal(name, "listparser feeds",
                         [(o["xmlUrl"], o["title"] or o["text"], [o["group"]] if o["group"] else []) for o in outlines],
                         [(f["url"], f["title"], f["categories"]) for f in parsed.feeds])

    feed_expect = expect.get("feed") or {}
    if "title" in feed_expect:
        report.equal(name, "OPML title", expected_as_plain(feed_expect["title"]), (title or "").strip())
    wanted = expect.get("outlines")
    if wanted is None:
        report.ok()
        return
    if len(wanted) != len(outlines):
        report.fail(name, f"{len(outlines)} rss outlines, expected {len(wanted)}")
    for index, (want, got) in enumerate(zip(wanted, outlines)):
        where = f"{name} outline {index + 1}"
        # Attribute values are shown literally; XML normalises nothing in them that we write
        # (line breaks and tabs are written as character references).
        group = want.get("group")
        group = [] if group is None else [group] if isinstance(group, str) else list(group)
        report.equal(where, "group", [xml_chars(g) for g in group], got["group"])
        for key in ("title", "xmlUrl", "htmlUrl"):
            if key in want:
                expected = xml_chars(want[key]) if want[key] is not None else None
                report.equal(where, key, expected, got[key])
        if "title" in want:
            report.equal(where, "text", xml_chars(want["title"]), got["text"])


# --- main --------------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", metavar="FILE")
    parser.add_argument("--expect", metavar="EXPECT.json", help="original texts to compare with")
    parser.add_argument("--allow-extra", action="store_true", help="feeds may hold items the expectations do not list")
    args = parser.parse_args(argv)

    if feedparser is None or podcastparser is None:
        print("check_feeds.py needs feedparser and podcastparser: pip install feedparser podcastparser",
              file=sys.stderr)
        return 2

    expectations = {}
    if args.expect:
        try:
            with open(args.expect, encoding="utf-8") as handle:
                expectations = json.load(handle).get("files", {})
        except (OSError, ValueError) as error:
            print(f"cannot read {args.expect}: {error}", file=sys.stderr)
            return 2

    report = Report()
    for path in args.files:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as error:
            print(f"cannot read {path}: {error}", file=sys.stderr)
            return 2
        name = os.path.basename(path)
        expect = expectations.get(path) or expectations.get(name) or {}
        detected, problem = detect_format(data)
        if problem:
            report.fail(name, problem)
            continue
        fmt = expect.get("format", detected)
        if fmt != detected:
            report.fail(name, f"expected a {fmt} document, found {detected}")
            continue
        if fmt == "opml":
            check_opml(report, name, data, expect)
            continue
        check_with_feedparser(report, name, data, fmt, expect, args.allow_extra)
        if fmt == "podcast":
            check_with_podcastparser(report, name, data, expect, args.allow_extra)

    print(f"{report.passed} passed, {report.failed} failed")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
