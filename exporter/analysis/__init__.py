"""Offline analysis of saved esxtop captures: load only the needed columns into pandas, summarise,
compare two runs, plan capacity (the paper's Table 2) and backfill captures into Prometheus."""
