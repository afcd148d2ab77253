"""The verdict's checks, one module per group of rules, each with the rule ids of
`compat.rule_ids`; `compat.verdict.judge` runs them (as `lint/checks/` is run by lint's
engine)."""
