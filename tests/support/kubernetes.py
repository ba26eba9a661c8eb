"""What the Kubernetes manifests are checked against: the Kubernetes versions we claim to run on,
the Prometheus Operator whose CRDs (ServiceMonitor, PrometheusRule) they use, and those CRDs'
schemas made as strict as the API server's field validation."""

from __future__ import annotations

KUBERNETES_VERSIONS = ("1.29.0", "1.34.0")  # the oldest and newest minor we claim to run on
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator@v0.85.0"


def strict(schema: dict) -> dict:
    """Deny fields a CRD schema does not declare, as the API server's strict field validation does."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if isinstance(schema.get("pattern"), str) and "(?i)" in schema["pattern"]:
            # Go's RE2 takes (?i) anywhere; Python only at the start, where it means the same here.
            schema["pattern"] = "(?i)" + schema["pattern"].replace("(?i)", "")
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
    elif isinstance(schema, list):
        schema = [strict(v) for v in schema]
    return schema
