// Package sim is a discrete-event simulator of a GPU fleet under four admission
// strategies, run side by side on the same job stream:
//
//   - counting: today's engine — admit in order any job whose GPU count fits its
//     cluster's free count; the nodes then take admitted jobs first-fit as they
//     can, and an admitted job that fits no node waits holding its count;
//   - best-effort FIFO with placement (Kueue's default): skip a job that does
//     not fit, try the next;
//   - strict FIFO with placement: the first job that does not fit blocks;
//   - backfill: placement, a reservation for the first job that does not fit
//     in each resource domain, EASY backfill around it;
//   - conservative backfill: a reservation for every job that does not fit,
//     in order (gpupool's default).
//
// In: a Config (fleet size, load, seed, horizon). Out: per strategy a Result
// (utilisation, effective utilisation, waits, jobs never started) and a markdown
// table. Everything is deterministic for a seed; time is simulated from a fixed
// epoch, no clock is read.
package sim
