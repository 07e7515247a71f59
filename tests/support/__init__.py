"""What the tests share, so that no test module imports another: fakes of the components a test
does not start for real, the files the commands read, and the commands as the tests run them.
The fixtures built on them are in tests/conftest.py.

- `fakes`: the scripted model in process (`ScriptedLLM`), a fake retriever and embedder; for
  the fake server, the environment that points every role at it (`use_endpoint`, `SECRET`) and
  the judge's and scorers' replies.
- `fake_openai_server` (with `fake_batches`, its Files and Batch APIs): the OpenAI-compatible
  HTTP server the commands run against; `standin_llama`: a process that acts as llama.cpp's;
  `llm`: freshrag's client on such an endpoint.
- `datasets`: `write_dataset`, the questions and articles files; `wikidump`: MediaWiki export
  files of the released articles; `builds`: `freshrag build` as the builder tests run it.
- `runs`: run directories, written by hand or by `freshrag run` (`run_cli`); `legacy`: pickles
  in the released runs' format; `dom`: the HTML report parsed, or rendered by Chromium.
- `systems`: one question, its article and chunks for the strategies, three articles for the
  index; `costs`: the cost tests' price and the dry run's printed table.
"""
