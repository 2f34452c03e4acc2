"""Job model and executors (local, process pool, Ray) for benchmark pipelines."""

from .executors import EXECUTORS, run_jobs
from .jobs import (
    Job,
    JobError,
    JobInputError,
    chain_fingerprints,
    is_done,
    job_kind,
    order_jobs,
    read_result,
    run_job,
)

__all__ = [
    "Job",
    "JobError",
    "JobInputError",
    "job_kind",
    "run_job",
    "run_jobs",
    "is_done",
    "read_result",
    "order_jobs",
    "chain_fingerprints",
    "EXECUTORS",
]
