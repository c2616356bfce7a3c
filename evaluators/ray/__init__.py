"""The Ray backend: each evaluation a Ray task, run on its node in that node's own local or
Docker sandbox, with the problem folder packed to travel with it; a GEPA script's candidates
go to an actor per slot instead, which keeps the script's worker alive on its node."""
