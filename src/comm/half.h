/* half.h - float16 and bfloat16 reductions for MPI, which has neither type:
 * the elements travel as 16-bit words (MPI_UINT16_T) and these user ops
 * widen each pair to float, combine it, and round back (to nearest even). */
#ifndef CELL_COMM_HALF_H
#define CELL_COMM_HALF_H
#include <mpi.h>

/* kind: 0 float16, 1 bfloat16; op: 0 sum, 1 prod, 2 max, 3 min. Creates
 * the MPI_Op on first use (after MPI_Init); MPI_OP_NULL on failure. */
MPI_Op cell_comm_half_op(int kind, int op);
/* Free the ops made (before MPI_Finalize). */
void cell_comm_half_free(void);

#endif
