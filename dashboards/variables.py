"""Template variables shared by the dashboards: datasource, host, LUN (device), adapter."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as db
from grafana_foundation_sdk.models import dashboard as dm

from .panels import DS

# The datasource uid that deploy/grafana/provisioning/datasources/ defines.
PROVISIONED_DATASOURCE_UID = "esxi-prometheus"


def datasource() -> db.DatasourceVariable:
    return (
        db.DatasourceVariable("datasource")
        .label("Data source")
        .type("prometheus")
        .current(dm.VariableOption(text="Prometheus (esxi-storage)", value=PROVISIONED_DATASOURCE_UID))
    )


def _query(name: str, label: str, query: str, description: str, multi: bool = True) -> db.QueryVariable:
    v = (
        db.QueryVariable(name)
        .label(label)
        .description(description)
        .datasource(DS)
        .query(query)
        .refresh(dm.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(dm.VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(multi)
    )
    if multi:
        v = v.all_value(".*").current(dm.VariableOption(text="All", value="$__all"))
    return v


def host() -> db.QueryVariable:
    return _query("host", "Host", "label_values(esxi_lun_queue_depth, host)", "ESXi host (esxtop's host name)")


def lun(multi: bool = True) -> db.QueryVariable:
    return _query(
        "lun",
        "LUN",
        'label_values(esxi_lun_queue_depth{host=~"$host"}, device)',
        "LUN canonical name (naa.*, t10.*, mpx.*)",
        multi,
    )


def datastore() -> db.QueryVariable:
    return _query(
        "datastore",
        "Datastore",
        'label_values(esxi_vm_disk_info{host=~"$host"}, datastore)',
        "Datastore holding VM disks (vSphere source)",
    )


def sioc_datastore() -> db.QueryVariable:
    return _query(
        "datastore",
        "Datastore",
        'label_values(esxi_datastore_sioc_normalized_latency_seconds{host=~"$host"}, datastore)',
        "Datastore with Storage I/O Control statistics (vSphere source)",
    )


def vm() -> db.QueryVariable:
    return _query(
        "vm", "VM", 'label_values(esxi_vm_disk_reads_total{host=~"$host"}, vm)', "Virtual machine (with virtual disk I/O)"
    )


def adapter() -> db.QueryVariable:
    return _query(
        "adapter", "Adapter", 'label_values(esxi_adapter_commands_total{host=~"$host"}, adapter)', "Storage adapter (vmhbaN)"
    )


def disk() -> db.QueryVariable:
    return _query(
        "disk",
        "Disk",
        'label_values(esxi_disk_smart_status{host=~"$host"}, device)',
        "Local disk read for SMART (its LUN name: t10.*, naa.*, mpx.*)",
    )


def textbox(name: str, label: str, default: str, description: str) -> db.TextBoxVariable:
    return (
        db.TextBoxVariable(name)
        .label(label)
        .description(description)
        .default_value(default)
        .current(dm.VariableOption(text=default, value=default))
    )


def custom(name: str, label: str, values: list[str], default: str, description: str) -> db.CustomVariable:
    return (
        db.CustomVariable(name)
        .label(label)
        .description(description)
        .values(",".join(values))
        .current(dm.VariableOption(text=default, value=default))
        .allow_custom_value(True)
    )
