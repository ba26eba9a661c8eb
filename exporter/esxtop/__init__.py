"""esxtop batch-mode source: the reader and the streams that feed it."""

from exporter.esxtop.reader import EsxtopError, EsxtopReader, read_file

__all__ = ["EsxtopError", "EsxtopReader", "read_file"]
