// Package slurm is the scheduler's executor for Slurm batch jobs: it runs Slurm's
// own commands, scontrol and scancel, with a timeout each.
//
// In: an executor.Target naming a Slurm job, by Target.SlurmJobID or by gpupool's
// job key "slurm/<cluster>/<id>" (array tasks "<id>_<task>" and heterogeneous
// components "<id>+<n>" too). Out: commands run, and an executor.Outcome whose Detail
// lists them.
//
// Every action first reads the job's state with
//
//	scontrol --oneliner show job <id>
//
// so that a job already requeued, held, running or finished is left alone (Done
// false), and so that a finished job is never requeued: scontrol requeue would
// otherwise start it again. "Invalid job id specified" (Slurm has forgotten the job,
// MinJobAge after it ended) is executor.ErrNotFound. Then:
//
//   - Stop with requeue: scontrol requeue Incomplete <id>, or scontrol requeuehold
//     Incomplete <id> when SlurmConfig.RequeueHold is set, so the job waits for Resume. Slurm
//     stops the job its own way (SIGCONT, SIGTERM, SIGKILL after the cluster's
//     KillWait); grace is not applied. Incomplete makes Slurm skip a job that ended
//     since the state was read.
//   - Stop without requeue, grace > 0: scancel --signal=TERM --full <id> (SIGTERM to
//     every step, the batch script included), a wait of grace, then scancel <id>
//     (Slurm's own SIGTERM, KillWait, SIGKILL). With grace 0: scancel <id> alone.
//     A pending job is cancelled with scancel <id> alone.
//   - Resume: scontrol release <id>, only for a pending job that is held
//     (Priority=0); a job requeued without a hold needs no release. With the
//     scheduler's placement (Target.Placement), first scontrol update
//     JobId=<id> ReqNodeList=<node,node,…>: the pending job's required node list
//     (sbatch --nodelist), so it starts on the nodes it was placed on; a refused
//     update leaves the job held (it is not released to start elsewhere). Node
//     names are the model's, which must be Slurm's; GPU indices are left to
//     Slurm's gres selection.
//   - Kill: executor.ErrUnsupported; processes are the node agent's.
//
// Slurm reports errors only as text (scancel even exits 0 for a job that is already
// gone), so the executor matches the messages of Slurm's error table
// (slurm_errno.c); unknown messages are returned as errors with the command's
// stderr. IsRetryable reports timeouts and an unreachable controller.
package slurm
