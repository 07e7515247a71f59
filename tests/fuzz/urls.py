"""Base URLs for the configuration and environment tests: good ones of every allowed shape, and
bad ones each broken in one known way (so that no oracle has to decide)."""

from hypothesis import strategies as st

HOSTS = (st.from_regex(r"[a-z][a-z0-9]{0,10}(\.[a-z][a-z0-9]{0,8}){0,2}", fullmatch=True)
         | st.sampled_from(["127.0.0.1", "localhost", "[::1]", "api.openai.com"]))
PORTS = st.one_of(st.just(""), st.integers(1, 65_535).map(lambda port: f":{port}"))
PATHS = st.from_regex(r"(/[a-z0-9._-]{1,8}){0,3}/?", fullmatch=True)
GOOD_URLS = st.builds(lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
                      st.sampled_from(["http", "https"]), HOSTS, PORTS, PATHS)
WORDS = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=10)

BAD_URLS = st.one_of(
    # no scheme (an empty value is no value: the variable counts as unset)
    WORDS.filter(lambda t: t and not t.lower().startswith(("http://", "https://"))),
    st.just("not a url"),
    st.tuples(HOSTS, st.sampled_from([" ", "\t", "\n", "\x7f", "\u2028"]), PATHS).map(
        lambda p: f"http://{p[0]}{p[1]}{p[2]}"),                                  # whitespace
    st.tuples(HOSTS, st.integers(65_536, 10**12) | st.from_regex(r"[a-z]{1,4}", fullmatch=True))
    .map(lambda p: f"https://{p[0]}:{p[1]}/v1"),                                 # bad port
    HOSTS.map(lambda host: f"http://{host}:0"),
    st.tuples(GOOD_URLS, st.sampled_from("?#"), st.from_regex(r"[a-z=&]{0,6}", fullmatch=True))
    .map(lambda p: "".join(p)),                                                   # query, fragment
    st.tuples(st.from_regex(r"[a-z]{1,5}", fullmatch=True), HOSTS).map(
        lambda p: f"http://{p[0]}:secret@{p[1]}/v1"),                            # credentials
    PATHS.map(lambda path: f"http://{path}").filter(lambda u: not u[7:].lstrip("/").strip(".")
                                                   or u.startswith("http:///")),  # no host
)
