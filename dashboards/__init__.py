"""Grafana dashboards for esxi-storage-exporter, generated from code.

`python -m dashboards` writes the JSON under dashboards/provisioned/ (for file provisioning,
datasource uid from deploy/grafana/) and dashboards/import/ (for the Grafana UI's Import, with
`__inputs`). `python -m dashboards --check` fails if the committed JSON is not what the code makes.
"""
