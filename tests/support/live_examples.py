"""The `--help` examples that tests/integration/test_help_examples_live.py runs as written (on
the local MediaWiki and the embedded model), named once for it and for
tests/cli/test_help_examples.py, which checks them against every command's examples."""

RECENT = "freshrag build --n 200 --cutoff 2024-06-30 --out datasets/recent"
DRY_RUN = f"{RECENT} --dry-run"
MONTHLY = "freshrag build --created 2024-01:2025-06 --per-month 20 --out datasets/monthly"
SINCE = "freshrag build --since datasets/monthly"
NEEDS = "freshrag build --needs needs.txt --cutoff 2024-06-30 --n 50 --out datasets/needs"
SERVE = "freshrag serve --port 8080"
SERVED = "http://127.0.0.1:8080/v1"
SERVED_RUN = (f"freshrag run --base-url {SERVED} --model smollm2-135m-instruct --limit 3 "
              "--out results/served")
LIVE = (RECENT, DRY_RUN, MONTHLY, SINCE, NEEDS, SERVE, SERVED_RUN)
