"""The search: the population (islands, a MAP-Elites grid per island, parent selection:
population.py), the prompts built from it (prompts.py, prompt_files.py), and how the loop
spends its LLM calls: behaviour clusters, model and temperature choice, repairs, stagnation
bursts and meta-notes. Derived from the archive like the population."""
