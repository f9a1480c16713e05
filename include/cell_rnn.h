/* cell_rnn.h - public C API: the recurrent layers' time loop (RNN with
 * tanh or ReLU, LSTM, GRU), one layer and one direction per call.
 * Included by cell.h; the conventions at the top of cell.h apply. */
#ifndef CELL_RNN_H
#define CELL_RNN_H
#include "cell.h"

/* The recurrent cell a call runs. Gate orders as MindSpore and PyTorch:
 * LSTM i, f, g, o; GRU r, z, n. */
typedef enum cell_rnn_mode {
  CELL_RNN_TANH = 0,
  CELL_RNN_RELU,
  CELL_RNN_LSTM,
  CELL_RNN_GRU,
  CELL_RNN_MODE_COUNT
} cell_rnn_mode;

/* One layer-direction of a recurrent net over a whole sequence. x {T, B, I}
 * (time first), h0 {B, H}, c0 {B, H} (LSTM only, else NULL), w_ih {G*H, I},
 * w_hh {G*H, H}, b_ih and b_hh {G*H} (both or neither), G = 1 (RNN), 4
 * (LSTM) or 3 (GRU); float32 or float64, all one dtype. lengths: NULL or
 * an integer tensor {B} of values 1..T: steps past a sequence's length
 * give zero output and keep the state. reverse: run t = T..1 (with lengths,
 * each sequence from its own last step). *out is {T + 2, B, H}: rows 1..T
 * the outputs, row T + 1 the final h, row T + 2 the final c (zeros but for
 * LSTM). Records one "RNNBackward" node whose backward runs the whole
 * backward through time in C. */
CELL_API cell_status cell_op_rnn(cell_rnn_mode mode, const cell_tensor *x, const cell_tensor *h0,
                                 const cell_tensor *c0, const cell_tensor *w_ih,
                                 const cell_tensor *w_hh, const cell_tensor *b_ih,
                                 const cell_tensor *b_hh, const cell_tensor *lengths, int reverse,
                                 cell_tensor **out);

#endif
