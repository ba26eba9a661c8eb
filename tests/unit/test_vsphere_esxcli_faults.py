"""esxcli's faults through the method executer, read as a user needs them: ESXi's faultstring for
an esxcli error is only "EsxCLI.CLIFault.summary", its words are in the detail's errMsg lines
(govmomi's simulator sends the same shape, simulator/esxcli.go); a NotAuthenticated fault is the
session's, so the client logs in again rather than counting it against the command."""

from __future__ import annotations

import pytest

from exporter.vsphere import esxcli, xmlguard

ENVELOPE = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"'
    ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body><soapenv:Fault>'
    "<faultcode>ServerFaultCode</faultcode><faultstring>{string}</faultstring><detail>{detail}</detail>"
    "</soapenv:Fault></soapenv:Body></soapenv:Envelope>"
)


def fault(string: str, detail: str):
    return xmlguard.parse(ENVELOPE.format(string=string, detail=detail).encode())


def test_an_esxcli_fault_says_its_errmsg_lines_not_the_summary_key():
    root = fault(
        "EsxCLI.CLIFault.summary",
        '<VimEsxCLICLIFaultFault xmlns="urn:vim25" xsi:type="VimEsxCLICLIFault">'
        "<errMsg>Unable to find option UseATSForHBOnVMFS5</errMsg><errMsg>  see   esxcli help </errMsg>"
        "</VimEsxCLICLIFaultFault>",
    )
    assert esxcli.fault_of(root) == ("VimEsxCLICLIFaultFault", "Unable to find option UseATSForHBOnVMFS5; see esxcli help")


def test_a_fault_without_errmsg_says_its_faultstring():
    root = fault(
        "The object or item referred to could not be found.",
        '<NotFoundFault xmlns="urn:vim25" xsi:type="NotFound"></NotFoundFault>',
    )
    assert esxcli.fault_of(root) == ("NotFoundFault", "The object or item referred to could not be found.")


def test_a_fault_with_no_detail_has_no_kind():
    assert esxcli.fault_of(fault("Internal error", "")) == ("", "Internal error")


@pytest.mark.parametrize(
    "detail, said",
    [
        ('<obj xmlns="urn:vim25"><errMsg>Invalid device</errMsg></obj>', "Invalid device"),
        ("not xml <errMsg>", ""),
        ("", ""),
        (None, ""),
    ],
)
def test_a_returned_faults_detail_document(detail, said):
    assert esxcli._detail_message(detail) == said


def test_not_authenticated_is_told_apart_by_its_detail():
    """_call raises it as pyVmomi's vim.fault.NotAuthenticated (tests/integration/test_smart_vsphere.py)."""
    root = fault("The session is not authenticated.", '<NotAuthenticatedFault xmlns="urn:vim25" xsi:type="NotAuthenticated"/>')
    assert esxcli.fault_of(root) == ("NotAuthenticatedFault", "The session is not authenticated.")
