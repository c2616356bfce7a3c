"""How the loop spends its LLM calls: behaviour clusters, model and temperature choice,
repairs, stagnation bursts and meta-notes. Derived from the archive like the population."""
