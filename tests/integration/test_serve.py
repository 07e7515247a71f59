"""`freshrag serve`: the embedded llama.cpp server in the foreground, stopped by Ctrl-C."""

import re
import subprocess
import sys
import time

import openai
import pytest

from freshrag.scoring.judge import GRADE_TOOL, JUDGE_MAX_TOKENS
from tests.support.serving import serving

pytestmark = pytest.mark.integration


def test_serve_answers_forced_tool_calls_and_stops_on_ctrl_c():
    with serving([sys.executable, "-m", "freshrag", "serve"], stderr=subprocess.DEVNULL,
                 stop_timeout_s=30) as process:
        line = process.stdout.readline()
        base_url = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line).group(1)
        client = openai.OpenAI(base_url=base_url, api_key="none")
        reply = client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": "Rate: 'Paris is in France.'"}],
            tools=[GRADE_TOOL], tool_choice={"type": "function", "function": {"name": "submit_grade"}},
            temperature=0, max_tokens=JUDGE_MAX_TOKENS)  # as the judge sends it
        call = reply.choices[0].message.tool_calls[0]
        assert call.function.name == "submit_grade"
        assert reply.usage.prompt_tokens > 0
    time.sleep(0.5)
    with pytest.raises(openai.APIConnectionError):
        openai.OpenAI(base_url=base_url, api_key="none", max_retries=0, timeout=3).models.list()
