"""Pages with dated histories for the changed-facts style (docs/building.md#changed-facts), as
export files for the dump source, the history reader and the local MediaWiki's importDump: a
field that changed after the cutoff, one vandalised at the cutoff and reverted, a page unchanged,
a page whose latest infobox does not parse, a page created after the cutoff. Each revision is
longer than A_r's 1,000 characters, so that every page is sampled."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import IO
from xml.sax.saxutils import escape

from tests.support.wikidump import DumpPage, Revision, write_dump

CUTOFF = "2023-06-30"
PROSE = ("The town lies in a broad valley between two low ridges. Its market square is lined "
         "with old houses of grey stone, and a river runs along its southern edge. ") * 8


def box(population: str, mayor: str, founded: str = "1850") -> str:
    return (f"{{{{Infobox settlement\n| name = Town\n| population_total = {population}\n"
            f"| leader_name = [[{mayor}]]\n| established_date = {founded}\n}}}}\n")


def text(population: str, mayor: str, note: str = "") -> str:
    return box(population, mayor) + (f"'''The town''' is a town of {population} inhabitants. "
                                     f"{note}\n\n{PROSE}")


def page(page_id: int, title: str, revisions: list[tuple[str, str]]) -> DumpPage:
    made: list[Revision] = []
    for offset, (stamp, wikitext) in enumerate(revisions):
        made.append(Revision(page_id * 100 + offset, stamp, wikitext,
                             parent_id=made[-1].id if made else None))
    return DumpPage(page_id, title, made)


PAGES = [
    # population 4,812 -> 5,020 after the cutoff; the mayor vandalised the day before the cutoff
    # and reverted two days later
    page(1, "Springfield", [
        ("2019-03-01T10:00:00Z", text("4,812", "Ann Smith")),
        ("2022-02-01T10:00:00Z", text("4,812", "Ann Smith", "A new school opened.")),
        ("2023-06-29T10:00:00Z", text("4,812", "Joe Vandal")),
        ("2023-07-01T10:00:00Z", text("4,812", "Ann Smith")),
        ("2024-01-15T10:00:00Z", text("5,020", "Ann Smith")),
        ("2024-03-01T10:00:00Z", text("5,020", "Ann Smith", "The library was extended.")),
    ]),
    # vandalised after the cutoff and reverted: nothing changed
    page(2, "Shelbyville", [
        ("2018-05-01T10:00:00Z", text("12,000", "Carla Diaz")),
        ("2023-09-01T10:00:00Z", text("99,999,999", "Carla Diaz")),
        ("2023-09-01T12:00:00Z", text("12,000", "Carla Diaz")),
        ("2024-02-01T10:00:00Z", text("12,000", "Carla Diaz", "The bridge was repainted.")),
    ]),
    # the same population written another way: the same value after normalisation
    page(3, "Ogdenville", [
        ("2017-01-01T10:00:00Z", text("3,100", "Dan Brown")),
        ("2024-04-01T10:00:00Z", text("3100", "Dan Brown")),
    ]),
    # the latest revision's infobox never closes
    page(4, "North Haverbrook", [
        ("2016-01-01T10:00:00Z", text("800", "Eve Stone")),
        ("2024-05-01T10:00:00Z", text("900", "Eve Stone").replace("\n}}\n", "\n", 1)),
    ]),
    # created after the cutoff
    page(5, "Capital City", [
        ("2024-02-01T10:00:00Z", text("1,000,000", "Fay Wong")),
        ("2024-06-01T10:00:00Z", text("1,100,000", "Fay Wong")),
    ]),
]


def write_pages(path: Path) -> Path:
    return write_dump(path, PAGES)


def write_long_history(out: IO[str], revisions: int, prose_chars: int = 400) -> None:
    """An export file of one page, "Long Town", of `revisions` revisions two hours apart from
    2010, written as it is made: its population goes up by one every 1,000 revisions."""
    start = datetime(2010, 1, 1, tzinfo=timezone.utc)
    out.write('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n'
              "<siteinfo><sitename>long</sitename></siteinfo>\n"
              "<page><title>Long Town</title><ns>0</ns><id>1</id>\n")
    filler = ("x" * prose_chars)
    for number in range(1, revisions + 1):
        stamp = (start + timedelta(hours=2 * number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        wikitext = (f"{{{{Infobox settlement\n| population_total = {1000 + number // 1000}\n}}}}"
                    f"\nLong Town, edit {number}. {filler}")
        parent = f"<parentid>{number - 1}</parentid>" if number > 1 else ""
        out.write(f"<revision><id>{number}</id>{parent}<timestamp>{stamp}</timestamp>"
                  f"<text>{escape(wikitext)}</text></revision>\n")
    out.write("</page>\n</mediawiki>\n")
