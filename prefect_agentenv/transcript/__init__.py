"""Transcripts of task runs: a typed model (report.json's ``transcript``), its builder and its markdown."""

from prefect_agentenv.transcript.build import StepFields, build_transcript
from prefect_agentenv.transcript.markdown import transcript_markdown
from prefect_agentenv.transcript.models import Transcript

__all__ = ["StepFields", "Transcript", "build_transcript", "transcript_markdown"]
