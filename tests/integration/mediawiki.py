"""A real MediaWiki (Debian's `mediawiki` package) installed into a temporary directory and served
by PHP's built-in web server, for tests that must talk to the actual API rather than a fake.

Nothing under /usr/share/mediawiki, /var/lib/mediawiki or /etc/mediawiki is touched: the code is
run in place, and MediaWiki (1.38+) is pointed at this wiki's own LocalSettings.php through
`--conf` (maintenance scripts) and the MW_CONFIG_FILE environment variable (web requests). The
SQLite database, lock files and server log all live in the given directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Iterator

from tests.support.wikidump import (
    DumpPage,
    Revision,
    article_pages,
    disambiguation_page,
    disambiguation_template,
    later,
    redirect_page,
    write_dump,
)

MEDIAWIKI_DIR = Path("/usr/share/mediawiki")
SITE_NAME = "freshrag test wiki"
ADMIN = "Admin"
# Never used to log in; install.php only insists on a password that passes its policy.
ADMIN_PASSWORD = "freshrag-local-test-wiki-admin-password"
DB_NAME = "freshrag"

# Appended to the LocalSettings.php that install.php writes (which already has
# $wgMainCacheType = CACHE_NONE and $wgEnableUploads = false).
_TEST_SETTINGS = """
# --- freshrag test settings ---
wfLoadExtension( 'TextExtracts' );  # prop=extracts, the builder's source of plain text
# A throwaway database needs no fsync: without this, importDump waits on the disk (4 min, not 30 s).
$wgDBservers = [ [
\t'host' => '', 'dbname' => $wgDBname, 'user' => '', 'password' => '', 'type' => 'sqlite',
\t'load' => 1, 'flags' => DBO_DEFAULT, 'variables' => [ 'synchronous' => 'OFF' ],
] ];
# No object cache writes from API reads, so that concurrent requests never wait on SQLite locks.
$wgParserCacheType = CACHE_NONE;
$wgMessageCacheType = CACHE_NONE;
$wgSessionCacheType = CACHE_NONE;
$wgJobRunRate = 0;  # web requests do not run the jobs that an import queues
$wgDisableSearchUpdate = true;
$wgRateLimits = [];
$wgShowExceptionDetails = true;
"""


class LocalMediaWiki:
    """`with LocalMediaWiki(directory) as wiki:` installs a fresh, empty wiki (the installer's
    Main Page is deleted, so every page is one a test imported) and serves it at `wiki.api_url`
    until the block ends. `import_dump` loads pages, before or while the server runs."""

    def __init__(self, directory: Path, workers: int = 4, startup_timeout_s: float = 30.0):
        self.directory = Path(directory)
        self.workers = workers
        self.startup_timeout_s = startup_timeout_s
        self.port = _free_port()
        self.server_url = f"http://127.0.0.1:{self.port}"
        self.api_url = f"{self.server_url}/api.php"
        self.settings = self.directory / "LocalSettings.php"
        self.data_dir = self.directory / "data"
        self.server_log = self.directory / "server.log"
        self._server: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> LocalMediaWiki:
        self.install()
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()

    def install(self) -> None:
        """install.php with SQLite into `directory`, then the test settings, then no pages."""
        if not (MEDIAWIKI_DIR / "maintenance" / "install.php").is_file():
            raise RuntimeError(f"no MediaWiki at {MEDIAWIKI_DIR}: "
                               f"apt-get install mediawiki php-sqlite3 php-cli")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._php("maintenance/install.php", "--dbtype", "sqlite", "--dbpath", str(self.data_dir),
                  "--dbname", DB_NAME, "--server", self.server_url, "--scriptpath", "",
                  "--confpath", str(self.directory), "--skins", "", "--pass", ADMIN_PASSWORD,
                  SITE_NAME, ADMIN, conf=False)
        with self.settings.open("a", encoding="utf-8") as settings:
            settings.write(_TEST_SETTINGS)
        # list=random would otherwise draw the installer's "Main Page" among the test's pages.
        self._php("maintenance/deleteBatch.php", "--r", "not a test page", input="Main Page\n")

    def import_dump(self, path: Path, link_updates: bool = True) -> None:
        """Import an XML export file (.xml or .xml.gz; this PHP has no bzip2 module).

        importDump.php writes `page` (with `page_random`, which list=random samples, and
        `page_is_redirect`), `revision` and the text whatever `link_updates` says, so the API
        sees the pages at once. `link_updates=False` passes `--no-updates`, which skips the
        secondary updates: link tables (templatelinks, which prop=templates reads; pagelinks),
        page_props, site statistics. About 6 times faster, for pages whose links nobody asks.
        """
        args = ["--no-updates"] if not link_updates else []
        self._php("maintenance/importDump.php", "--quiet", *args, str(path))

    def start(self) -> None:
        """`php -S` on this wiki's port with `workers` processes; returns once the API answers."""
        env = dict(os.environ, MW_CONFIG_FILE=str(self.settings),
                   PHP_CLI_SERVER_WORKERS=str(self.workers))
        with self.server_log.open("wb") as log:  # a file, not a pipe: php -S logs every request
            self._server = subprocess.Popen(
                ["php", "-S", f"127.0.0.1:{self.port}", "-t", str(MEDIAWIKI_DIR)],
                cwd=self.directory, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        probe = f"{self.api_url}?action=query&meta=siteinfo&format=json"
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            if self._server.poll() is not None:
                raise RuntimeError(f"php -S on port {self.port} exited with "
                                   f"{self._server.returncode}:\n{self._log_tail()}")
            try:
                with urllib.request.urlopen(probe, timeout=5) as answer:
                    if b'"sitename"' in answer.read():
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{probe} did not answer within {self.startup_timeout_s} s; "
                                   f"server log:\n{self._log_tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        """Terminate the server's process group (the workers are children of the first PHP
        process, and outlive it if only that one is signalled); kill it if it lingers."""
        server, self._server = self._server, None
        if server is None or server.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(server.pid, sig)
            except ProcessLookupError:
                return
            try:
                server.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue

    def _php(self, script: str, *args: str, conf: bool = True, input: str | None = None,
             timeout_s: float = 600.0) -> subprocess.CompletedProcess[str]:
        command = ["php", script, *(["--conf", str(self.settings)] if conf else []), *args]
        shown = " ".join(part if part != ADMIN_PASSWORD else "***" for part in command)
        try:
            done = subprocess.run(command, cwd=MEDIAWIKI_DIR, input=input, capture_output=True,
                                  text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"`{shown}` did not finish within {timeout_s} s") from None
        if done.returncode != 0:
            tail = (done.stderr.strip() or done.stdout.strip())[-2000:]
            raise RuntimeError(f"`{shown}` failed with exit status {done.returncode}:\n{tail}")
        return done

    def _log_tail(self) -> str:
        try:
            return self.server_log.read_text(encoding="utf-8", errors="replace")[-2000:]
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    """A port the kernel just handed out, so free (a race with other processes is possible but
    unlikely in the moment before `php -S` binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class SeededMediaWiki:
    """The running local wiki and what was imported into it, by title, for tests to assert on:
    an article's first revision is its creation, its last revision holds the full text."""
    api_url: str
    articles: dict[str, DumpPage]
    redirects: dict[str, DumpPage]
    disambiguations: dict[str, DumpPage]
    startup_s: float  # install + import + server up, as measured by the fixture


@contextlib.contextmanager
def seeded_wiki(directory: Path, articles_jsonl: Path) -> Iterator[SeededMediaWiki]:
    """A started LocalMediaWiki holding every article of `articles_jsonl` with its two-revision
    history (tests/support/wikidump.py), 3 redirects to articles and 2 disambiguation pages (plus
    Template:Disambiguation)."""
    started = time.monotonic()
    articles = {page.title: page for page in article_pages(articles_jsonl)}
    redirects, disambiguations = _redirects_and_disambiguations(list(articles))
    with LocalMediaWiki(directory / "wiki") as wiki:
        # Nobody asks for the articles' links: `--no-updates` imports them about 6 times faster.
        wiki.import_dump(write_dump(directory / "articles.xml", articles.values()),
                         link_updates=False)
        # The disambiguation pages need theirs: prop=templates reads the templatelinks table.
        others = [disambiguation_template(5000, _OTHERS_CREATED), *disambiguations,
                  *redirects]
        wiki.import_dump(write_dump(directory / "others.xml", others))
        yield SeededMediaWiki(wiki.api_url, articles,
                              {page.title: page for page in redirects},
                              {page.title: page for page in disambiguations},
                              time.monotonic() - started)


_OTHERS_CREATED = "2020-06-01T00:00:00Z"


def _redirects_and_disambiguations(
        titles: list[str]) -> tuple[list[DumpPage], list[DumpPage]]:
    """3 redirects to articles and 2 disambiguation pages linking to articles, with page ids
    from 5001 (the template takes 5000), clear of the articles' 1..1101."""
    redirects = [redirect_page(5001 + n, f"{titles[n]} (alternative title)", titles[n],
                               _OTHERS_CREATED) for n in range(3)]
    disambiguations = [
        disambiguation_page(5004, "Mercury (disambiguation)", titles[10:13], _OTHERS_CREATED),
        disambiguation_page(5005, "Apollo (disambiguation)", titles[20:23], _OTHERS_CREATED),
    ]
    clashes = {page.title for page in redirects + disambiguations} & set(titles)
    if clashes:
        raise ValueError(f"seed titles that are also articles: {clashes}")
    return redirects, disambiguations


LINKED_AFTER = "2021-10-01"  # the linked pages are made from released articles created after this


def linked_pages(articles_jsonl: Path, count: int = 6,
                 first_id: int = 7001) -> tuple[list[DumpPage], dict[str, str]]:
    """Post-cutoff pages that link to each other, made from the first `count` released articles
    created after LINKED_AFTER: each page's text opens with a sentence linking to the next one in
    a ring (`[[Next title]]`), the first page's through a redirect to the second, which is one
    more page ("<second> (redirect)"). Two revisions each, as article_pages gives them. Returns
    the pages (the redirect last) and each article's link target (the redirect resolved)."""
    rows = []
    with articles_jsonl.open(encoding="utf-8") as lines:
        for line in lines:
            row = json.loads(line)
            if row["created"] and row["created"] >= LINKED_AFTER and len(row["content"]) > 1500:
                rows.append(row)
            if len(rows) == count:
                break
    titles = [row["title"] for row in rows]
    targets = {title: titles[(i + 1) % count] for i, title in enumerate(titles)}
    redirect = f"{titles[1]} (redirect)"
    pages = []
    for offset, row in enumerate(rows):
        page_id, title = first_id + offset, row["title"]
        shown = redirect if offset == 0 else targets[title]
        text = (f"{title} is often compared with [[{shown}|{targets[title]}]] by its "
                f"visitors.\n\n{row['content']}")
        created = row["created"].replace("+00:00", "Z")
        first = Revision(2 * page_id, created, text[: len(text) // 2])
        pages.append(DumpPage(page_id, title, [first, Revision(
            2 * page_id + 1, later(created, 30), text, parent_id=first.id)]))
    pages.append(redirect_page(first_id + count, redirect, titles[1], _OTHERS_CREATED))
    return pages, targets
