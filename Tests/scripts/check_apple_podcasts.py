#!/usr/bin/env python3
"""Check every feed in a folder the way podcast apps and feed readers read it.

usage: check_apple_podcasts.py [--artwork DIR --artwork-base URL] [--json] FOLDER

Every *.xml / *.rss file under FOLDER that is RSS 2.0, and every *.atom file:
  * feedparser reads it without error (bozo 0);
  * GUIDs (Atom ids) are present and unique within the file;
  * every image URL (channel and items) is absolute http(s);
  * every category is on Apple Podcasts' list (itunes:category, and RSS
    <category> written as "Category" or "Category/Subcategory").
A feed with the itunes: namespace is a podcast feed (podcast apps subscribe
to it) and is checked against Apple's requirements too, independently of
storesync's own lint:
  * podcastparser reads it and finds every item's enclosure;
  * channel: title, description, language, explicit true/false, at least one
    listed itunes:category, itunes:image a JPEG or PNG of 1400-3000 px square,
    its size read from the URL (iTunes artwork URLs state it) and, when the
    URL is in the artwork mirror (--artwork-base), from the mirrored file's
    JPEG/PNG header in --artwork DIR;
  * items: title, enclosure with an absolute http(s) url, length > 0 and a
    type Apple plays, unique guids.

Prints one line per violation, then a summary per file (what feedparser and
podcastparser read: items, title, image, categories), and ends with
"N files, M violations". Exit status 0 when there are none, 1 otherwise,
2 for a usage error or a missing module.
"""

import argparse
import json
import os
import re
import struct
import sys
import xml.etree.ElementTree as ET

try:
    import feedparser
except ImportError:
    feedparser = None
try:
    import podcastparser
except ImportError:
    podcastparser = None

ITUNES = "http://www.itunes.com/dtds/podcast-1.0.dtd"
ATOM = "http://www.w3.org/2005/Atom"

# Apple Podcasts' categories since 2019 (Podcasts Connect).
APPLE = {
    "Arts": ["Books", "Design", "Fashion & Beauty", "Food", "Performing Arts", "Visual Arts"],
    "Business": ["Careers", "Entrepreneurship", "Investing", "Management", "Marketing", "Non-Profit"],
    "Comedy": ["Comedy Interviews", "Improv", "Stand-Up"],
    "Education": ["Courses", "How To", "Language Learning", "Self-Improvement"],
    "Fiction": ["Comedy Fiction", "Drama", "Science Fiction"],
    "Government": [],
    "History": [],
    "Health & Fitness": ["Alternative Health", "Fitness", "Medicine", "Mental Health", "Nutrition", "Sexuality"],
    "Kids & Family": ["Education for Kids", "Parenting", "Pets & Animals", "Stories for Kids"],
    "Leisure": ["Animation & Manga", "Automotive", "Aviation", "Crafts", "Games", "Hobbies", "Home & Garden",
                "Video Games"],
    "Music": ["Music Commentary", "Music History", "Music Interviews"],
    "News": ["Business News", "Daily News", "Entertainment News", "News Commentary", "Politics", "Sports News",
             "Tech News"],
    "Religion & Spirituality": ["Buddhism", "Christianity", "Hinduism", "Islam", "Judaism", "Religion", "Spirituality"],
    "Science": ["Astronomy", "Chemistry", "Earth Sciences", "Life Sciences", "Mathematics", "Natural Sciences",
                "Nature", "Physics", "Social Sciences"],
    "Society & Culture": ["Documentary", "Personal Journals", "Philosophy", "Places & Travel", "Relationships"],
    "Sports": ["Baseball", "Basketball", "Cricket", "Fantasy Sports", "Football", "Golf", "Hockey", "Rugby",
               "Running", "Soccer", "Swimming", "Tennis", "Volleyball", "Wilderness", "Wrestling"],
    "Technology": [],
    "True Crime": [],
    "TV & Film": ["After Shows", "Film History", "Film Interviews", "Film Reviews", "TV Reviews"],
}
ENCLOSURE_TYPES = {"audio/mpeg", "audio/x-m4a", "audio/mp4", "audio/aac", "video/mp4", "video/quicktime",
                   "video/x-m4v", "application/pdf"}
SIZE_IN_URL = re.compile(r"(\d{2,4})x(\d{2,4})(?:[a-z]{0,3})(?:-\d+)?\.(?:jpe?g|png|webp)$", re.I)


def listed(path):
    if not path or len(path) > 2 or path[0] not in APPLE:
        return False
    return len(path) == 1 or path[1] in APPLE[path[0]]


def http_url(url):
    return bool(re.match(r"^https?://[^/\s]+", url or "", re.I))


def image_header_size(path):
    """(width, height, kind) from a JPEG's SOFn or a PNG's IHDR, or None."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        w, h = struct.unpack(">II", data[16:24])
        return w, h, "png"
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data):
            if data[i] != 0xFF:
                i += 1
                continue
            marker = data[i + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
                i += 2
                continue
            length = struct.unpack(">H", data[i + 2:i + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h, "jpeg"
            i += 2 + length
    return None


class Checker:
    def __init__(self, artwork_dir, artwork_base):
        self.artwork_dir = artwork_dir
        self.artwork_base = (artwork_base or "").rstrip("/")
        self.violations = []
        self.summaries = []

    def fail(self, file, message):
        self.violations.append(f"{file}: {message}")

    def check_image(self, file, where, url, podcast):
        if not http_url(url):
            self.fail(file, f"{where}: image '{url}' is not an absolute http(s) URL")
            return
        path = url.split("?")[0].split("#")[0]
        if podcast and not re.search(r"\.(jpe?g|png)$", path, re.I):
            self.fail(file, f"{where}: image '{url}' is not a .jpg or .png")
        sizes = []
        m = SIZE_IN_URL.search(path)
        if m:
            sizes.append(("URL", int(m.group(1)), int(m.group(2))))
        if self.artwork_dir and self.artwork_base and url.startswith(self.artwork_base + "/"):
            name = url[len(self.artwork_base) + 1:]
            local = os.path.join(self.artwork_dir, name)
            if not os.path.isfile(local):
                self.fail(file, f"{where}: mirrored image {name} is not in {self.artwork_dir}")
            else:
                header = image_header_size(local)
                if header is None:
                    self.fail(file, f"{where}: mirrored image {name} is neither JPEG nor PNG")
                else:
                    sizes.append((f"{header[2]} header", header[0], header[1]))
        if podcast:
            for source, w, h in sizes:
                if w != h or not (1400 <= w <= 3000):
                    self.fail(file, f"{where}: image is {w}x{h} px by its {source}; Apple wants a square of 1400-3000 px")

    def check_rss(self, file, root):
        channel = root.find("channel")
        podcast = any(el.tag.startswith("{" + ITUNES + "}") for el in channel.iter())
        parsed = feedparser.parse(file)
        if parsed.bozo:
            self.fail(file, f"feedparser: {parsed.bozo_exception}")
        items = channel.findall("item")
        guids = [(i.findtext("guid") or "").strip() for i in items]
        for n, g in enumerate(guids):
            if not g:
                self.fail(file, f"item {n + 1}: no guid")
        dupes = {g for g in guids if g and guids.count(g) > 1}
        for g in sorted(dupes):
            self.fail(file, f"guid {g} appears {guids.count(g)} times")
        if len(parsed.entries) != len(items):
            self.fail(file, f"feedparser read {len(parsed.entries)} entries of {len(items)} items")
        # Categories: itunes paths and RSS "A/B" categories.
        paths = []
        for cat in channel.findall("{%s}category" % ITUNES):
            subs = cat.findall("{%s}category" % ITUNES)
            top = cat.get("text", "")
            paths += [[top, s.get("text", "")] for s in subs] or [[top]]
        paths += [c.text.split("/") for c in channel.findall("category") if c.text]
        for p in paths:
            if not listed(p):
                self.fail(file, f"category '{'/'.join(p)}' is not on Apple's list")
        images = []
        itunes_image = channel.find("{%s}image" % ITUNES)
        if itunes_image is not None:
            images.append(("channel", itunes_image.get("href", "")))
        rss_image = channel.findtext("image/url")
        if rss_image:
            images.append(("channel <image>", rss_image.strip()))
        for n, item in enumerate(items):
            for el in item.findall("{%s}image" % ITUNES):
                images.append((f"item {n + 1}", el.get("href", "")))
            for el in item.findall("{http://search.yahoo.com/mrss/}thumbnail"):
                images.append((f"item {n + 1} thumbnail", el.get("url", "")))
        for where, url in images:
            self.check_image(file, where, url, podcast)
        summary = {"file": file, "format": "podcast" if podcast else "rss", "items": len(items),
                   "feedparser": {"title": parsed.feed.get("title"), "entries": len(parsed.entries),
                                  "image": (parsed.feed.get("image") or {}).get("href"),
                                  "language": parsed.feed.get("language")},
                   "categories": ["/".join(p) for p in paths]}
        if podcast:
            self.check_podcast(file, channel, items)
            if podcastparser is not None:
                with open(file, "rb") as f:
                    pp = podcastparser.parse("https://example.com/" + os.path.basename(file), f)
                episodes = pp.get("episodes", [])
                with_enclosure = sum(1 for e in episodes if e.get("enclosures"))
                summary["podcastparser"] = {"title": pp.get("title"), "episodes": len(episodes),
                                            "with_enclosure": with_enclosure, "cover_url": pp.get("cover_url"),
                                            "type": pp.get("type")}
                if with_enclosure != len(items):
                    self.fail(file, f"podcastparser found enclosures in {with_enclosure} of {len(items)} items")
        self.summaries.append(summary)

    def check_podcast(self, file, channel, items):
        def text(el, path):
            return (el.findtext(path) or "").strip()
        for name in ("title", "description", "language"):
            if not text(channel, name):
                self.fail(file, f"channel: no <{name}>")
        if text(channel, "{%s}explicit" % ITUNES) not in ("true", "false"):
            self.fail(file, "channel: itunes:explicit must be true or false")
        if not channel.findall("{%s}category" % ITUNES):
            self.fail(file, "channel: no itunes:category")
        image = channel.find("{%s}image" % ITUNES)
        if image is None or not image.get("href"):
            self.fail(file, "channel: no itunes:image")
        for n, item in enumerate(items):
            where = f"item {n + 1}"
            if not text(item, "title"):
                self.fail(file, f"{where}: no title")
            enclosure = item.find("enclosure")
            if enclosure is None:
                self.fail(file, f"{where}: no enclosure")
                continue
            if not http_url(enclosure.get("url")):
                self.fail(file, f"{where}: enclosure url '{enclosure.get('url')}' is not absolute http(s)")
            try:
                length = int(enclosure.get("length", "0"))
            except ValueError:
                length = 0
            if length <= 0:
                self.fail(file, f"{where}: enclosure length {enclosure.get('length')!r} is not > 0")
            if (enclosure.get("type") or "").lower() not in ENCLOSURE_TYPES:
                self.fail(file, f"{where}: enclosure type {enclosure.get('type')!r} is not one Apple plays")

    def check_atom(self, file, root):
        parsed = feedparser.parse(file)
        if parsed.bozo:
            self.fail(file, f"feedparser: {parsed.bozo_exception}")
        ids = [(e.findtext("{%s}id" % ATOM) or "").strip() for e in root.findall("{%s}entry" % ATOM)]
        for i in sorted({i for i in ids if ids.count(i) > 1}):
            self.fail(file, f"entry id {i} appears {ids.count(i)} times")
        if any(not i for i in ids):
            self.fail(file, "an entry has no id")
        for c in root.findall("{%s}category" % ATOM):
            term = c.get("term", "")
            if term not in APPLE and not any(term in subs for subs in APPLE.values()):
                self.fail(file, f"category '{term}' is not on Apple's list")
        logo = root.findtext("{%s}logo" % ATOM)
        if logo:
            self.check_image(file, "logo", logo.strip(), False)
        self.summaries.append({"file": file, "format": "atom", "items": len(ids),
                               "feedparser": {"title": parsed.feed.get("title"), "entries": len(parsed.entries)}})

    def check_file(self, file):
        try:
            root = ET.parse(file).getroot()
        except ET.ParseError as error:
            self.fail(file, f"not well-formed XML: {error}")
            return
        if root.tag == "rss":
            self.check_rss(file, root)
        elif root.tag == "{%s}feed" % ATOM:
            self.check_atom(file, root)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("folder")
    parser.add_argument("--artwork", help="the artwork mirror's folder")
    parser.add_argument("--artwork-base", help="the URL feeds use for the mirror (artworkBaseURL)")
    parser.add_argument("--json", action="store_true", help="print the per-file summaries as JSON")
    args = parser.parse_args()
    if feedparser is None or podcastparser is None:
        print("feedparser and podcastparser are needed: python3 -m pip install feedparser podcastparser")
        return 2
    checker = Checker(args.artwork, args.artwork_base)
    count = 0
    for directory, _, names in sorted(os.walk(args.folder)):
        for name in sorted(names):
            if name.startswith(".") or not name.endswith((".xml", ".rss", ".atom")):
                continue
            checker.check_file(os.path.join(directory, name))
            count += 1
    for line in checker.violations:
        print(line)
    if args.json:
        print(json.dumps(checker.summaries, ensure_ascii=False, indent=1))
    print(f"{count} files, {len(checker.violations)} violations")
    return 0 if not checker.violations else 1


if __name__ == "__main__":
    sys.exit(main())
