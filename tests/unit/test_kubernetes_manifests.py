"""deploy/k8s: what a pod of each workload starts with."""

from pathlib import Path
from typing import Any

import pytest
import yaml

from cortex_gateway.settings import GatewaySettings

MANIFESTS = Path(__file__).parents[2] / "deploy" / "k8s"


def pod_specs() -> dict[str, dict[str, Any]]:
    """Each Deployment's and Job's pod template spec, by workload name."""
    specs = {}
    for manifest in sorted(MANIFESTS.glob("*.yaml")):
        for resource in yaml.safe_load_all(manifest.read_text()):
            if resource and resource["kind"] in ("Deployment", "Job"):
                specs[resource["metadata"]["name"]] = resource["spec"]["template"]["spec"]
    return specs


def test_every_workload_is_found() -> None:
    assert set(pod_specs()) == {"cortex-gateway", "cortex-indexer", "cortex-aggregator", "cortex-migrate"}


@pytest.mark.parametrize("workload", sorted(pod_specs()))
def test_no_pod_gets_the_services_variables(workload: str) -> None:
    """Kubernetes gives every pod `<SERVICE>_PORT=tcp://…` for each Service of its namespace unless told not to.
    For the Service cortex-gateway that is CORTEX_GATEWAY_PORT, the gateway's own setting, which it cannot
    read as a port: before, the gateway exited at start with code 2 (shown below)."""
    assert pod_specs()[workload].get("enableServiceLinks") is False


@pytest.mark.parametrize("workload", sorted(pod_specs()))
def test_every_pod_meets_the_restricted_pod_security_standard(workload: str) -> None:
    spec = pod_specs()[workload]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    for container in spec["containers"]:
        assert container["securityContext"] == {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_the_gateway_cannot_read_a_service_link_as_its_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORTEX_GATEWAY_DATABASE_URL", "postgresql://cortex@localhost/cortex")
    monkeypatch.setenv("CORTEX_GATEWAY_SECRET", "x" * 32)
    monkeypatch.setenv("CORTEX_GATEWAY_PORT", "tcp://10.96.0.12:80")
    with pytest.raises(ValueError, match="port"):
        GatewaySettings()
