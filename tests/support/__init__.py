"""What the tests share and nothing else uses: CLI and Docker helpers, canned edits of the
problems, attack candidates, problem contracts. What bench/ needs too lives in
evolve/testing/ instead, so bench/ never imports tests/."""
