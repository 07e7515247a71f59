"""Each workflow as a library service, the one place it is orchestrated (docs/api.md): build,
evaluate, score and report. The commands of the same names parse their options and call these;
a notebook calls them as `freshrag.build`, `freshrag.evaluate`, `freshrag.score` and
`freshrag.report`. They sit above run and reporting, which a run's summary needs both of
(docs/design.md#the-layers)."""
