"""The Ray backend: each evaluation a Ray task, run on its node in that node's own local or
Docker sandbox, with the problem folder packed to travel with it."""
