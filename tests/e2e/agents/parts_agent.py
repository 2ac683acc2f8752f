"""An agent whose handler answers with every kind of part: "report" gets one artifact
of a text, a file as bytes, a file by URI, data and an A2UI part; "parts" a bare list
of parts; "data" a single data part; "stream" the same, yielded one by one; anything
else text."""

import sys

from cleveragents import A2A, Agent, Artifact, DataPart, FilePart, TextPart, create_a2ui_part

BLOB = b"\x00\x01 not UTF-8: \xff\xfe\x80"
CHART = "https://example.com/charts/q3.png"
DATA = {"rows": [{"quarter": "Q3", "revenue": 12.5}], "complete": True}
A2UI = {"createSurface": {"surfaceId": "report", "catalogId": "standard"}}


def everything() -> list:
    return [TextPart("Summary: revenue is up.", metadata={"lang": "en"}),
            FilePart(file_bytes=BLOB, name="raw.bin", mime_type="application/octet-stream"),
            FilePart(file_uri=CHART, name="q3.png"),
            DataPart(DATA),
            create_a2ui_part(A2UI)]


def reply(text: str):
    if text == "report":
        return Artifact(parts=everything(), name="Report", description="Every kind of part",
                        artifact_id="report-1", metadata={"quarter": "Q3"})
    if text == "parts":
        return everything()[1:3]
    if text == "data":
        return DataPart(DATA)
    if text == "stream":
        return iter(["Here it comes.", *everything()])
    return f"plain {text}"


if __name__ == "__main__":
    A2A(agent=Agent(name="Reporter", handler=reply)).serve_stdio(memory="--memory" in sys.argv)
