"""The SMART host of tests/fixtures/smart/ without SSH: the esxcli-over-SSH runner answering from the
fixtures as simulators/esxi_ssh/esxcli.py gives them, some answers edited, and a page laid out as
esxcli lays it out."""

from __future__ import annotations

from exporter.esxcli.inventory import AnswerTooLarge, EsxcliError
from exporter.esxcli.ssh import MAX_OUTPUT, EsxcliOverSsh
from simulators.esxi_ssh import esxcli as fake_esxcli
from simulators.esxi_ssh.esxcli import smart_answers

HOST = "esx-edge01.lab.local"
GET = "storage core device smart get"


class FixtureRunner(EsxcliOverSsh):
    """The SSH runner with its transport replaced by the fixtures: what esxcli prints, and its
    error's last line when it exits non-zero, exactly as over SSH."""

    def __init__(self, variant="healthy", broken=(), fail=()):
        super().__init__(target=None, store=None, stop=None, host_name=None)
        self.variant, self.broken, self.fail, self.asked = variant, set(broken), set(fail), []

    def text(self, words, max_output=MAX_OUTPUT):
        self.asked.append(list(words))
        if words[-1] in self.fail:
            raise EsxcliError("no answer within 60 s")
        if words[-1] in self.broken:
            return "Parameter  Value\n%%% not a table %%%\n"
        answer = self.answer(words)
        if len(answer.encode()) > max_output:  # as process.run: refused past the cap
            raise AnswerTooLarge(f"answer larger than {max_output} bytes: refused")
        return answer

    def answer(self, words) -> str:
        answer = smart_answers(self.variant).get(tuple(words))
        if answer is None:
            raise EsxcliError(fake_esxcli.CANNOT_OPEN)
        return (fake_esxcli.SMART / answer).read_text()


class Edited(FixtureRunner):
    """The fixture host with some answers edited: words[-1] (device or adapter) -> f(text)."""

    def __init__(self, edits, **kwargs):
        super().__init__(**kwargs)
        self.edits = edits

    def answer(self, words):
        text = super().answer(words)
        edit = self.edits.get(words[-1])
        return edit(text) if edit else text


def table(*rows: tuple[str, ...]) -> str:
    """A dashed table as esxcli lays it out, its columns as wide as their widest cell."""
    header = ("Parameter", "Value", "Threshold", "Worst", "Raw")[: len(rows[0])]
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    lines = [header, tuple("-" * w for w in widths), *rows]
    return "".join("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() + "\n" for line in lines)
