"""freshrag's core: types, the LLM client, token accounting, the judge, the runner, results,
reports and the CLI."""
