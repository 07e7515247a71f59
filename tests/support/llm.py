"""freshrag's LLM client on an endpoint a test starts (the fake server, mostly), with a short
backoff so that retries take no time, and a question to send it."""

from freshrag.core.config import LLMSettings, RoleConfig
from freshrag.llm.client import LLMClient
from tests.support.fakes import SECRET

MESSAGES = [{"role": "user", "content": "How many spans does the Velmora bridge have?"}]


def client(base_url, cache=None, max_attempts=4, timeout_s=5.0) -> LLMClient:
    """The answer and judge roles on `base_url`, with the key SECRET."""
    roles = {r: RoleConfig(model="fake-model", base_url=base_url, api_key=SECRET)
             for r in ("answer", "judge")}
    settings = LLMSettings(roles=roles, timeout_s=timeout_s, max_attempts=max_attempts)
    return LLMClient(settings, cache, backoff_s=0.01)
