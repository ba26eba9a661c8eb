"""pyVmomi's answer deserializer is freed by reference counting once its answer is read: with the
cyclic collector off (as during the inventory walk), no parser, deserializer or answer stays behind."""

from __future__ import annotations

import gc
import io
import weakref

import pytest
import pyVmomi.SoapAdapter
from pyVmomi import vim

from exporter.vsphere import client  # noqa: F401 - installs what the exporter uses
from exporter.vsphere.deserializer import LettingGoDeserializer

ENVELOPE = (
    b'<?xml version="1.0" encoding="UTF-8"?>'
    b'<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
    b'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>%s</soapenv:Body></soapenv:Envelope>'
)
ANSWER = ENVELOPE % (
    b'<RetrieveServiceContentResponse xmlns="urn:vim25"><returnval>'
    b'<rootFolder type="Folder">group-d1</rootFolder>'
    b'<propertyCollector type="PropertyCollector">propertyCollector</propertyCollector>'
    b"<about><name>VMware vCenter Server</name><fullName>VMware vCenter Server 8.0.3</fullName>"
    b"<vendor>VMware, Inc.</vendor><version>8.0.3</version><build>1</build><osType>linux-x64</osType>"
    b"<productLineId>vpx</productLineId><apiType>VirtualCenter</apiType><apiVersion>8.0.3.0</apiVersion></about>"
    b"</returnval></RetrieveServiceContentResponse>"
)
FAULT = ENVELOPE % (
    b"<soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>The session is not authenticated.</faultstring>"
    b'<detail><NotAuthenticatedFault xmlns="urn:vim25" xsi:type="NotAuthenticated">'
    b'<object type="Folder">group-d1</object><privilegeId>System.View</privilegeId></NotAuthenticatedFault></detail>'
    b"</soapenv:Fault>"
)
BROKEN = ANSWER[: len(ANSWER) // 2]  # the connection dropped in the middle of the answer


@pytest.fixture
def collector_off():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def stub():
    return pyVmomi.SoapAdapter.SoapStubAdapter(host="127.0.0.1", port=443, version="vim.version.version9")


def deserialize(cls, body: bytes, result_type):
    """(what Deserialize returned or raised, a weak reference to the deserializer, to its answer)."""
    deserializer = cls(stub())
    try:
        out = deserializer.Deserialize(io.BytesIO(body), result_type)
    except Exception as err:  # noqa: BLE001 - what it raised is the outcome looked at
        out = type(err)  # not err: its traceback holds this frame, and the deserializer with it
    ref = weakref.ref(deserializer)
    del deserializer
    return out, ref


def test_pyvmomi_itself_leaves_the_answer_in_a_cycle(collector_off):
    """What the exporter works around: without it, the deserializer outlives its call."""
    out, ref = deserialize(pyVmomi.SoapAdapter.SoapResponseDeserializer.__mro__[1], ANSWER, vim.ServiceInstanceContent)
    assert out.about.version == "8.0.3"
    assert ref() is not None  # only the cyclic collector frees it
    gc.collect()
    assert ref() is None


def test_pyvmomi_calls_use_the_deserializer_that_lets_go():
    assert pyVmomi.SoapAdapter.SoapResponseDeserializer is LettingGoDeserializer


@pytest.mark.parametrize(
    ("body", "check"),
    [
        (ANSWER, lambda out: out.about.apiVersion == "8.0.3.0" and out.rootFolder._moId == "group-d1"),
        (FAULT, lambda out: isinstance(out, vim.fault.NotAuthenticated) and out.privilegeId == "System.View"),
        (BROKEN, lambda out: out is None or issubclass(out, Exception)),
    ],
    ids=["answer", "fault", "cut-short"],
)
def test_the_deserializer_is_freed_at_once_and_its_answer_is_whole(collector_off, body, check):
    out, ref = deserialize(LettingGoDeserializer, body, vim.ServiceInstanceContent)
    assert check(out), out
    assert ref() is None  # freed by reference counting, the collector off


def test_a_walk_of_answers_leaves_no_parser_behind(collector_off):
    """Many calls, the collector off: no deserializer, parser or answer is left for it to find."""
    before = sum(1 for o in gc.get_objects() if isinstance(o, pyVmomi.SoapAdapter.SoapResponseDeserializer.__mro__[1]))
    for _ in range(50):
        out, _ = deserialize(LettingGoDeserializer, ANSWER, vim.ServiceInstanceContent)
        del out
    after = sum(1 for o in gc.get_objects() if isinstance(o, pyVmomi.SoapAdapter.SoapResponseDeserializer.__mro__[1]))
    assert after == before
