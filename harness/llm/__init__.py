"""The LLM client and what it needs: the response cache, tool-call parsing, token counting, and the embedded llama.cpp server with its own tokenizer."""
