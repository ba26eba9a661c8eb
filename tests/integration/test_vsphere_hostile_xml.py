"""Hostile XML from a vSphere endpoint (issue 27): a local HTTPS endpoint in front of the storage
simulator answers one kind of request with billion laughs, quadratic blowup or an external entity
(simulators/hostile_vsphere.py), on every parse path the exporter has:

- pyVim's read of vimServiceVersions.xml at login (ElementTree),
- pyVmomi's own expat deserializer: the first SOAP call (RetrieveServiceContent) and a fault
  (HTTP 500) answered to Login,
- our ElementTree reader (exporter/vsphere/soap.py): RetrievePropertiesEx in discovery (an
  answer and a fault) and QueryPerf in collection,
- esxcli through the API (exporter/vsphere/esxcli.py): the ExecuteSoap answer, and esxcli's own
  document inside it,
- a second pyVmomi stub opened later on another endpoint (as the vSAN source opens one on
  /vsanHealth), which nothing in the exporter configures.

Each is refused at its DOCTYPE, with the target down and one error line. An answer over the size
cap (--vsphere.max-answer-size), plain or gzipped, is refused too. The exporter as a process under
a sustained attack stays under 200 MB of RSS (its peak, VmHWM).
"""

from __future__ import annotations

import ssl
import time

import pytest
from pyVmomi import vim
from pyVmomi.SoapAdapter import SoapStubAdapter

from exporter.vsphere import TargetConfig, VsphereTarget, xmlguard
from simulators import hostile_vsphere as hostile
from simulators.storagesim.sims import PASSWORD, USER, StorageSim
from tests.support.promtext import eventually, value
from tests.support.servers import Exporter

pytestmark = pytest.mark.integration
PAYLOADS = {
    "billion-laughs": hostile.billion_laughs,
    "quadratic-blowup": hostile.quadratic_blowup,
    "external-entity": hostile.external_entity,
}
# (what is attacked, HTTP status, the response element): the parse path it reaches.
PATHS = {
    "pyvim-service-versions": ("vimServiceVersions.xml", 200, "namespaces"),
    "pyvmomi-first-call": ("RetrieveServiceContent", 200, "RetrieveServiceContentResponse"),
    "pyvmomi-login-fault": ("Login", 500, "LoginResponse"),
    "soap-retrieve": ("RetrievePropertiesEx", 200, "RetrievePropertiesExResponse"),
    "soap-retrieve-fault": ("RetrievePropertiesEx", 500, "RetrievePropertiesExResponse"),
    "soap-query-perf": ("QueryPerf", 200, "QueryPerfResponse"),
}
MIB = 1 << 20


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    sim = StorageSim(tmp_path_factory.mktemp("storagesim"))
    yield sim
    sim.stop()


@pytest.fixture()
def proxy(upstream, tmp_path):
    endpoint = hostile.HostileProxy(upstream.url, tmp_path)
    yield endpoint
    endpoint.stop()


@pytest.fixture()
def password_file(tmp_path):
    path = tmp_path / "password"
    path.write_text(PASSWORD + "\n")
    return path


def target(proxy, password_file, **config) -> VsphereTarget:
    settings = dict(name="vc", url=proxy.url, user=USER, password_file=str(password_file), insecure=True, timeout=10.0)
    return VsphereTarget(TargetConfig(**{**settings, **config}))


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_parse_path_refuses_a_doctype(proxy, password_file, path, payload, caplog):
    on, status, response = PATHS[path]
    vc = target(proxy, password_file)
    try:
        if on == "QueryPerf":  # collection: discovery first, over a clean endpoint
            assert vc.discover(), vc.error
        proxy.attack(on, PAYLOADS[payload](response), status)
        started = time.monotonic()
        assert not (vc.collect() if on == "QueryPerf" else vc.discover())
        took = time.monotonic() - started
    finally:
        vc.client.close()
    assert proxy.served >= 1
    assert vc.up == 0
    assert "carries a DOCTYPE" in vc.error and "refused" in vc.error, vc.error
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "carries a DOCTYPE" in errors[0] and "\n" not in errors[0], errors
    assert took < 5, f"{took:.1f}s: the answer was parsed, not refused"


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("where", ["answer", "document-inside"])
def test_esxcli_answers_with_a_doctype_are_refused_and_discovery_goes_on(proxy, password_file, where, payload, caplog):
    """esxcli through the API (ExecuteSoap): its answer, and esxcli's own document inside it, are
    parsed by ElementTree one after the other; each is refused, as a failed esxcli command of
    every host (esxi_esxcli_up 0), while the discovery itself succeeds."""
    caplog.set_level("DEBUG", logger="exporter.vsphere.source")
    document = PAYLOADS[payload]("ExecuteSoapResponse")
    proxy.attack("ExecuteSoap", document if where == "answer" else hostile.esxcli_answer(document))
    vc = target(proxy, password_file)
    try:
        assert vc.discover(), vc.error
    finally:
        vc.client.close()
    health = {name: record for (kind, name), record in vc.store.health.items() if kind == "esxcli"}
    assert health and all(record.up == 0 for record in health.values()), health
    said = [r.getMessage() for r in caplog.records if "esxcli on" in r.getMessage()]
    assert said and all("carries a DOCTYPE" in line for line in said), said
    assert proxy.served >= len(health)


def test_a_second_pyvmomi_stub_is_guarded_without_extra_code(proxy):
    """A stub opened the way the vSAN source opens one (another endpoint path, the session cookie
    of the first), with nothing of the exporter around it: its first call is refused."""
    assert xmlguard.install  # the client imported it: the process is guarded from then on
    stub = SoapStubAdapter(
        host="127.0.0.1",
        port=proxy.port,
        path="/vsanHealth",
        version="vim.version.version9",
        sslContext=ssl._create_unverified_context(),
    )
    stub.cookie = 'vmware_soap_session="52a1"'
    proxy.attack("RetrieveServiceContent", hostile.quadratic_blowup("RetrieveServiceContentResponse"))
    with pytest.raises(xmlguard.AnswerRefused, match="carries a DOCTYPE"):
        vim.ServiceInstance("ServiceInstance", stub).RetrieveContent()
    assert proxy.served == 1


@pytest.fixture()
def small_cap():
    xmlguard.limit_answers(MIB)
    yield MIB
    xmlguard.limit_answers(TargetConfig(name="", url="").max_answer_size)


@pytest.mark.parametrize(
    "on, make",
    [
        ("RetrieveServiceContent", lambda r: hostile.oversized(r, 2 * MIB)),  # pyVmomi, read from the socket as parsed
        ("RetrievePropertiesEx", lambda r: hostile.oversized(r, 2 * MIB)),  # ours
    ],
    ids=["pyvmomi", "soap"],
)
def test_an_answer_over_the_cap_is_refused(proxy, password_file, small_cap, on, make):
    vc = target(proxy, password_file, max_answer_size=small_cap)
    proxy.attack(on, make(on + "Response"))
    try:
        assert not vc.discover()
    finally:
        vc.client.close()
    assert vc.up == 0 and f"answer larger than {MIB} bytes (--vsphere.max-answer-size): refused" in vc.error, vc.error


def test_a_gzip_bomb_is_refused_before_it_is_inflated_whole(proxy, password_file, small_cap):
    import tracemalloc

    bomb = hostile.gzip_bomb("RetrievePropertiesExResponse", 256 * MIB)
    assert len(bomb) < MIB // 2
    vc = target(proxy, password_file, max_answer_size=small_cap)
    proxy.attack("RetrievePropertiesEx", bomb, gzipped=True)
    tracemalloc.start()
    try:
        assert not vc.discover()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        vc.client.close()
    assert vc.up == 0 and "answer larger than" in vc.error, vc.error
    assert peak < 64 * MIB, f"{peak / MIB:.0f} MiB allocated while refusing a 256 MiB gzip bomb"


def test_the_default_cap_reads_a_real_discovery_and_collection(proxy, password_file):
    vc = target(proxy, password_file)
    try:
        assert vc.run_once(), vc.error
    finally:
        vc.client.close()
    assert vc.up == 1 and proxy.served == 0


def peak_rss(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.parametrize(
    "on, payload",
    [
        ("RetrieveServiceContent", "quadratic-blowup"),
        ("RetrieveServiceContent", "billion-laughs"),
        ("RetrievePropertiesEx", "quadratic-blowup"),
    ],
)
def test_the_exporter_under_attack_logs_one_line_reports_down_and_stays_small(proxy, password_file, tmp_path, on, payload):
    """serve against the endpoint, every retry answered with a 4 MB hostile answer (the size the
    issue measured 1.07 GB of RSS on) for at least 5 attempts."""
    size = {"quadratic-blowup": dict(references=1_300_000)}.get(payload, {})
    response = PAYLOADS[payload](on + "Response", **size)
    proxy.attack(on, response)
    log = tmp_path / "exporter.log"
    exporter = Exporter(
        "--vsphere",
        proxy.url,
        "--vsphere.user",
        USER,
        "--vsphere.password-file",
        str(password_file),
        "--vsphere.insecure",
        "--vsphere.interval=1s",
        log_path=log,
    )
    try:
        eventually(lambda: proxy.served >= 5, timeout=60, what="five attacks")
        text = exporter.metrics()
        peak = peak_rss(exporter.proc.pid)
    finally:
        exporter.stop()
    assert value(text, "esxi_vsphere_up", target="127.0.0.1") == 0
    lines = [line for line in log.read_text().splitlines() if " ERROR " in line]
    assert len(lines) == 1 and "carries a DOCTYPE" in lines[0], lines
    print(f"\n{on} {payload} ({len(response) / MIB:.1f} MiB answer): peak RSS {peak / MIB:.0f} MiB over {proxy.served} attacks")
    assert peak < 200 * MIB
