"""What the tests share, so that no test module imports another: fakes of the components a test
does not start for real, and writers of the files the commands read.

- `fakes`: the scripted model in process (`ScriptedLLM`), fake retriever and embedder, the
  environment that points every role at one endpoint (`use_endpoint`), judge replies.
- `fake_openai_server` (with `fake_batches`, its Files and Batch APIs): the OpenAI-compatible
  HTTP server the commands run against; `standin_llama`: a process that acts as llama.cpp's.
- `wikidump`: MediaWiki export files from the released articles; `runs`: run directories
  written by hand.

The fixtures built on them are in tests/conftest.py.
"""
