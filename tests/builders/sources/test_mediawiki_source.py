"""The MediaWiki source's checks that need no wiki; everything else about it is tested against a
real local MediaWiki in tests/integration/test_build_mediawiki.py."""

import socket

import pytest

from freshrag.builders.sources.mediawiki import MediaWikiSource, SourceError, _page_url


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_unreachable_wiki_is_named():
    url = f"http://127.0.0.1:{closed_port()}/w/api.php"
    with pytest.raises(SourceError, match=rf"^{url}: cannot reach the wiki"):
        MediaWikiSource(url, max_retries=0)


@pytest.mark.parametrize("url", ["en.wikipedia.org/w/api.php", "https://en.wikipedia.org/wiki/"])
def test_a_url_that_is_not_an_api_php_is_refused(url):
    with pytest.raises(SourceError, match="expected an http"):
        MediaWikiSource(url)


def test_article_urls_follow_the_wiki_layout():
    assert _page_url("https://en.wikipedia.org/w/api.php", "ZouXian (band)") == \
        "https://en.wikipedia.org/wiki/ZouXian_(band)"
    assert _page_url("http://127.0.0.1:8080/api.php", "A & B") == \
        "http://127.0.0.1:8080/index.php?title=A_%26_B"
