"""Slurm's job reason codes (squeue(1) "JOB REASON CODES", slurm.schedmd.com
job_reason_codes.html) in words: what each means and what the job's user can do.

Each entry is ``code: (meaning, advice)``, both marked for the catalogue and translated where
they are shown (:mod:`portal.jobs.explain`). Families of limits that Slurm names by resource
(``AssocGrp…``, ``QOSMax…``) have an entry per common resource and a fallback per family.
"""

from __future__ import annotations

from collections.abc import Mapping

from translations import N_

WAIT = N_("Nothing to do: it starts by itself when this clears.")
FOR_PROJECT = N_(
    "Wait for other jobs of the project to end, or ask the project admin to raise the quota."
)
FOR_USER = N_("Wait for one of your own running jobs to end.")
LESS = N_("Cancel it and submit it again asking for less, or ask the admin to raise the limit.")
OTHER_QOS = N_("Wait, or submit it again with another QOS (priority) your project may use.")
SHORTER = N_("Cancel it and submit it again with a shorter time limit.")

REASONS: Mapping[str, tuple[str, str]] = {
    # the queue itself
    "Priority": (N_("Jobs with a higher priority are ahead of it in the queue."), WAIT),
    "Resources": (
        N_("There are not enough free cards, CPUs or memory for it right now."),
        N_("Wait for running jobs to end, or ask for less (e.g. shards instead of a whole card)."),
    ),
    "WaitingForScheduling": (N_("The scheduler has not looked at it yet."), WAIT),
    "SchedDefer": (N_("Slurm looks at it in its next scheduling cycle."), WAIT),
    "Prolog": (N_("Its nodes are being prepared for it."), WAIT),
    "Cleaning": (N_("Slurm is still cleaning up after its previous run."), WAIT),
    "PowerUp": (N_("Its nodes are powering up."), WAIT),
    "NodesPowerUp": (N_("Its nodes are powering up."), WAIT),
    "BeginTime": (
        N_("The start time it asked for has not come yet."),
        N_("Wait, or change its start time."),
    ),
    "Dependency": (N_("It waits for the jobs it depends on to finish."), WAIT),
    "DependencyNeverSatisfied": (
        N_("A job it depends on ended in a way that can never satisfy the dependency."),
        N_("Cancel it, then submit it again without that dependency."),
    ),
    "JobArrayTaskLimit": (
        N_("Its job array already runs as many tasks as the array's limit allows."),
        WAIT,
    ),
    "Licenses": (N_("Licences it needs are in use by other jobs."), WAIT),
    # holds and launch failures
    "JobHeldUser": (
        N_("It is held by its user."),
        N_("Release it when it may start (scontrol release), or cancel it."),
    ),
    "JobHeldAdmin": (
        N_("It is held by an administrator or by the platform's scheduling policy."),
        N_("See the policy's reason on this page, or ask the platform admins."),
    ),
    "launch failed requeued held": (
        N_("Slurm could not start it on its node, so it was queued again and held."),
        N_("Ask the platform admins to check the node; then release or cancel the job."),
    ),
    "JobHoldMaxRequeue": (
        N_("It was queued again too many times and is now held."),
        N_("Read its output for the error, then cancel it or ask the platform admins."),
    ),
    "JobLaunchFailure": (
        N_("It could not be launched on its node."),
        N_("Submit it again; tell the platform admins if it happens again."),
    ),
    "SystemFailure": (
        N_("A failure of Slurm or of a node stopped it."),
        N_("Submit it again; tell the platform admins if it happens again."),
    ),
    # nodes, partitions, reservations
    "ReqNodeNotAvail": (
        N_("A node it needs is not available (down, drained or reserved)."),
        N_("Wait for the node to come back, or submit it again without naming those nodes."),
    ),
    "NodeDown": (
        N_("A node it needs is down."),
        N_("Wait for the node to come back; the platform admins are told of down nodes."),
    ),
    "BadConstraints": (
        N_("No node has the features it asks for."),
        N_("Cancel it and submit it again with features (constraints) that nodes have."),
    ),
    "PartitionDown": (
        N_("Its partition is down."),
        N_("Wait for the platform admins to bring it up, or submit it to another partition."),
    ),
    "PartitionInactive": (
        N_("Its partition is inactive and starts no jobs."),
        N_("Wait for the platform admins to bring it up, or submit it to another partition."),
    ),
    "PartitionTimeLimit": (
        N_("Its time limit is longer than its partition allows."),
        SHORTER,
    ),
    "PartitionNodeLimit": (
        N_("It asks for more nodes than its partition allows for one job."),
        N_("Cancel it and submit it again on fewer nodes, or to another partition."),
    ),
    "PartitionConfig": (
        N_("It asks for something its partition is not set up to give."),
        N_("Check its partition, project and resources, and submit it again."),
    ),
    "AccountNotAllowed": (
        N_("Its project may not use this partition."),
        N_("Cancel it and submit it to a partition your project may use."),
    ),
    "Reservation": (N_("It waits for its reservation to begin."), WAIT),
    "ReservationDeleted": (
        N_("The reservation it was submitted into was deleted."),
        N_("Cancel it and submit it again without the reservation."),
    ),
    "FrontEndDown": (N_("No front-end node is available to run it."), WAIT),
    # projects (Slurm accounts): quotas of the whole project
    "AssocGrpGRES": (N_("The project's card quota is used up."), FOR_PROJECT),
    "AssocGrpCpuLimit": (N_("The project's CPU quota is used up."), FOR_PROJECT),
    "AssocGrpMemLimit": (N_("The project's memory quota is used up."), FOR_PROJECT),
    "AssocGrpNodeLimit": (N_("The project's node quota is used up."), FOR_PROJECT),
    "AssocGrpJobsLimit": (
        N_("The project already runs as many jobs at once as it may."),
        FOR_PROJECT,
    ),
    "AssocGrpSubmitJobsLimit": (
        N_("The project already has as many jobs queued as it may."),
        FOR_PROJECT,
    ),
    "AssocGrpGRESMinutes": (
        N_("The project's card-hour budget is spent."),
        N_("Ask the project admin to raise the card-hour quota; until then it cannot start."),
    ),
    "AssocGrpCPUMinutesLimit": (
        N_("The project's core-hour budget is spent."),
        N_("Ask the project admin to raise the core-hour quota; until then it cannot start."),
    ),
    "AssocGrpGRESRunMinutes": (
        N_("The project's running jobs already hold as many card-hours as it may hold at once."),
        FOR_PROJECT,
    ),
    "AssocGrpCPURunMinutesLimit": (
        N_("The project's running jobs already hold as many core-hours as it may hold at once."),
        FOR_PROJECT,
    ),
    "AssocGrpWall": (N_("The project has used up its run time."), FOR_PROJECT),
    "AssocMaxJobsLimit": (
        N_("You already run as many jobs in this project as you may at once."),
        FOR_USER,
    ),
    "AssocMaxSubmitJobLimit": (
        N_("You already have as many jobs queued in this project as you may."),
        FOR_USER,
    ),
    "AssocMaxGRESPerJob": (
        N_("It asks for more cards than the project allows for one job."),
        LESS,
    ),
    "AssocMaxCpuPerJobLimit": (
        N_("It asks for more CPUs than the project allows for one job."),
        LESS,
    ),
    "AssocMaxMemPerJob": (
        N_("It asks for more memory than the project allows for one job."),
        LESS,
    ),
    "AssocMaxNodePerJobLimit": (
        N_("It asks for more nodes than the project allows for one job."),
        LESS,
    ),
    "AssocMaxWallDurationPerJobLimit": (
        N_("Its time limit is longer than the project allows for one job."),
        SHORTER,
    ),
    "AssociationJobLimit": (
        N_("The project already runs as many jobs at once as it may."),
        FOR_PROJECT,
    ),
    "AssociationResourceLimit": (
        N_("The project's quota of some resource is used up."),
        FOR_PROJECT,
    ),
    "AssociationTimeLimit": (N_("The project's time limit stops it."), SHORTER),
    "InvalidAccount": (
        N_("Its project (Slurm account) is not valid any more."),
        N_("Cancel it and submit it to a project you belong to."),
    ),
    "AccountingPolicy": (
        N_("A limit of its project or of its QOS keeps it from starting now."),
        N_("Wait, or ask the project admin which limit applies."),
    ),
    # QOS (priority classes)
    "QOSGrpGRES": (N_("The cards of its QOS (priority class) are all in use."), OTHER_QOS),
    "QOSGrpCpuLimit": (N_("The CPUs of its QOS (priority class) are all in use."), OTHER_QOS),
    "QOSGrpMemLimit": (N_("The memory of its QOS (priority class) is all in use."), OTHER_QOS),
    "QOSGrpNodeLimit": (N_("The nodes of its QOS (priority class) are all in use."), OTHER_QOS),
    "QOSGrpJobsLimit": (
        N_("Its QOS (priority class) already runs as many jobs as it may."),
        OTHER_QOS,
    ),
    "QOSGrpGRESMinutes": (
        N_("The card-hour budget of its QOS (priority class) is spent."),
        OTHER_QOS,
    ),
    "QOSGrpCPUMinutesLimit": (
        N_("The core-hour budget of its QOS (priority class) is spent."),
        OTHER_QOS,
    ),
    "QOSMaxJobsPerUserLimit": (
        N_("You already run as many jobs in this QOS (priority class) as you may."),
        N_("Wait for one of your jobs in this QOS to end, or use another QOS."),
    ),
    "QOSMaxSubmitJobPerUserLimit": (
        N_("You already have as many jobs queued in this QOS (priority class) as you may."),
        N_("Wait for one of your jobs in this QOS to end, or use another QOS."),
    ),
    "QOSMaxGRESPerUser": (
        N_("You already hold as many cards in this QOS (priority class) as you may."),
        N_("Wait for one of your jobs in this QOS to end, or use another QOS."),
    ),
    "QOSMaxCpuPerUserLimit": (
        N_("You already hold as many CPUs in this QOS (priority class) as you may."),
        N_("Wait for one of your jobs in this QOS to end, or use another QOS."),
    ),
    "QOSMaxGRESPerJob": (
        N_("It asks for more cards than its QOS (priority class) allows for one job."),
        LESS,
    ),
    "QOSMaxCpuPerJobLimit": (
        N_("It asks for more CPUs than its QOS (priority class) allows for one job."),
        LESS,
    ),
    "QOSMaxNodePerJobLimit": (
        N_("It asks for more nodes than its QOS (priority class) allows for one job."),
        LESS,
    ),
    "QOSMaxWallDurationPerJobLimit": (
        N_("Its time limit is longer than its QOS (priority class) allows."),
        SHORTER,
    ),
    "QOSMaxGRESPerAccount": (
        N_("The project already holds as many cards in this QOS (priority class) as it may."),
        OTHER_QOS,
    ),
    "QOSMaxJobsPerAccount": (
        N_("The project already runs as many jobs in this QOS (priority class) as it may."),
        OTHER_QOS,
    ),
    "QOSJobLimit": (N_("Its QOS (priority class) already runs as many jobs as it may."), OTHER_QOS),
    "QOSResourceLimit": (N_("A resource limit of its QOS (priority class) stops it."), OTHER_QOS),
    "QOSTimeLimit": (N_("Its QOS (priority class) time limit stops it."), SHORTER),
    "QOSUsageThreshold": (
        N_("Its project has used more than its QOS (priority class) allows for now."),
        OTHER_QOS,
    ),
    "QOSNotAllowed": (
        N_("Its QOS (priority class) is not open to its project or partition."),
        N_("Cancel it and submit it again with a QOS your project may use."),
    ),
    "InvalidQOS": (
        N_("Its QOS (priority class) is not valid for its project."),
        N_("Cancel it and submit it again with a QOS your project may use."),
    ),
    # why a job ended
    "TimeLimit": (N_("It reached its time limit."), N_("Submit it again with a longer limit.")),
    "DeadLine": (
        N_("Its deadline passed before it could finish."),
        N_("Submit it again with a later deadline or a shorter time limit."),
    ),
    "NonZeroExitCode": (
        N_("It ended with a non-zero exit code."),
        N_("Read its output for the error."),
    ),
    "OutOfMemory": (
        N_("It used more memory than it asked for."),
        N_("Submit it again asking for more memory."),
    ),
    "InactiveLimit": (N_("It was idle longer than the site allows."), N_("Submit it again.")),
    "BurstBufferResources": (N_("The burst buffer it needs is in use."), WAIT),
    "BurstBufferStageIn": (N_("Its data is being staged into the burst buffer."), WAIT),
}

#: Families Slurm names by resource (``AssocGrpBilling``, ``QOSMaxNodePerUserLimit`` …), for
#: codes without an entry of their own: prefix -> (meaning, advice), longest prefix first.
FAMILIES: tuple[tuple[str, tuple[str, str]], ...] = (
    ("AssocGrp", (N_("The project has reached one of its quotas."), FOR_PROJECT)),
    ("AssocMax", (N_("It asks for more than the project allows for one job or user."), LESS)),
    (
        "QOSGrp",
        (N_("Its QOS (priority class) has reached one of its limits."), OTHER_QOS),
    ),
    (
        "QOSMax",
        (N_("It asks for more than its QOS (priority class) allows per job or user."), LESS),
    ),
    ("Max", (N_("It asks for more than its QOS allows for one project."), LESS)),
    ("BurstBuffer", (N_("It waits for the burst buffer."), WAIT)),
)

UNKNOWN = (
    N_("Slurm gives a reason that has no explanation here yet."),
    N_("Ask the platform admins if it keeps the job waiting."),
)


#: ``BeginTime`` where the job's user set no start time: who set it instead -> words
BEGIN_TIME_BY: Mapping[str, tuple[str, str]] = {
    # the admission hook gave it a begin time for the placement daemon (DESIGN: placement)
    "placement": (
        N_("The platform is choosing the cards that suit it best; it starts within moments."),
        WAIT,
    ),
    # Slurm holds a requeued job back a little before it may start again
    "requeue": (N_("It was queued again and waits a moment before it starts again."), WAIT),
}
