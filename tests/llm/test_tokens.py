from freshrag.llm.tokens import count_text, encoding_for, estimate_usage


def test_unknown_models_fall_back_to_a_cl100k_encoding():
    assert encoding_for("smollm2-135m-instruct").name.startswith("cl100k_base")
    assert count_text("hello world", "smollm2-135m-instruct") == 2


def test_estimates_count_messages_tools_and_reply_and_are_flagged():
    messages = [{"role": "user", "content": "hello world"}]
    plain = estimate_usage(messages, None, "fine thanks", None, "any-model")
    with_tool = estimate_usage(messages, [{"type": "function", "function": {"name": "f"}}], None,
                               '{"retrieve": true}', "any-model")
    assert plain.estimated and with_tool.estimated
    framing = 3 + 3  # per message, and the reply primer
    assert plain.input == count_text("hello world", "any-model") + framing
    assert plain.output == count_text("fine thanks", "any-model")
    assert with_tool.input > plain.input and with_tool.output > 0
