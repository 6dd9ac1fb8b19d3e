/* Trains an Octet Linear layer through the C ABI alone (octet.h): it fits
 * y = A x + b, with A and b fixed and known, by SGD on the mean squared
 * error, with the layer's GEMMs in FP8 (current scaling, E4M3 forward, E5M2
 * gradients) inside an autocast scope.
 *
 * The host keeps nothing but the data and the FP32 master parameters: each
 * step uploads a batch, runs forward, computes the loss and its gradient on
 * the host, runs backward, reads the layer's gradients and writes the updated
 * parameters back. It prints the loss every 50 steps and exits non-zero
 * unless the final loss is below 1% of the initial one.
 *
 * Build (from the repository root, against the build tree build/; tests/demo
 * builds it too):
 *   cc -std=c99 -pedantic -Wall docs/examples/train_linear.c -Iapi/include \
 *      -Lbuild/lib -loctet -Wl,-rpath,build/lib
 * Run: ./a.out [backend]   (default: reference) */
#include <octet/octet.h>

#include <stdio.h>
#include <string.h>

#define IN 16
#define OUT 8
#define BATCH 32
#define STEPS 300
#define LEARNING_RATE 1.0f

#define TRY(call)                                                        \
  do {                                                                   \
    octet_status status_ = (call);                                       \
    if (status_ != OCTET_STATUS_SUCCESS) {                               \
      fprintf(stderr, "%s failed: %s: %s\n", #call,                      \
              octet_status_name(status_), octet_last_error_message());   \
      goto done;                                                         \
    }                                                                    \
  } while (0)

/* A small deterministic generator: uniform in [-1, 1). */
static unsigned long rng_state = 12345u;
static float uniform(void) {
  rng_state = (rng_state * 1103515245u + 12345u) & 0x7fffffffu;
  return (float)rng_state / 1073741824.0f - 1.0f;
}

static octet_tensor_desc matrix(int64_t rows, int64_t cols) {
  octet_tensor_desc desc;
  memset(&desc, 0, sizeof desc);
  desc.struct_size = sizeof desc;
  desc.dtype = OCTET_DTYPE_FP32;
  desc.ndim = 2;
  desc.shape[0] = rows;
  desc.shape[1] = cols;
  return desc;
}

int main(int argc, char** argv) {
  static float a[OUT][IN], b[OUT];           /* the map to learn */
  static float w[OUT * IN], bias[OUT];       /* FP32 master parameters */
  static float gw[OUT * IN], gbias[OUT];     /* their gradients */
  static float x[BATCH * IN], target[BATCH * OUT], y[BATCH * OUT], dy[BATCH * OUT];
  double first_loss = -1.0, loss = 0.0;
  int result = 1, step, i, j, r;
  size_t weight_index = 0, bias_index = 0;

  octet_context_options context_options;
  octet_linear_options linear_options;
  octet_tensor_desc in_desc = matrix(BATCH, IN), out_desc = matrix(BATCH, OUT);
  octet_context* ctx = NULL;
  octet_recipe* recipe = NULL;
  octet_layer* layer = NULL;
  octet_saved* saved = NULL;
  octet_tensor *tx = NULL, *ty = NULL, *tdy = NULL;
  octet_tensor *weight = NULL, *bias_param = NULL, *weight_grad = NULL, *bias_grad = NULL;

  for (i = 0; i < OUT; ++i) {
    for (j = 0; j < IN; ++j) a[i][j] = uniform();
    b[i] = 0.5f * uniform();
  }

  TRY(octet_context_options_init(&context_options));
  context_options.backend = argc > 1 ? argv[1] : "reference";
  TRY(octet_context_create(&context_options, &ctx));
  TRY(octet_recipe_create_current(NULL, &recipe)); /* defaults: HYBRID format */

  TRY(octet_linear_options_init(&linear_options));
  linear_options.in_features = IN;
  linear_options.out_features = OUT;
  linear_options.bias = 1;
  linear_options.params_dtype = OCTET_DTYPE_FP32;
  TRY(octet_layer_create_linear(ctx, &linear_options, &layer));

  /* Parameters start at zero (the layer leaves them unspecified). */
  memset(w, 0, sizeof w);
  memset(bias, 0, sizeof bias);
  TRY(octet_layer_find_parameter(layer, "weight", &weight_index));
  TRY(octet_layer_find_parameter(layer, "bias", &bias_index));
  TRY(octet_layer_get_parameter(layer, weight_index, &weight));
  TRY(octet_layer_get_parameter(layer, bias_index, &bias_param));
  TRY(octet_tensor_copy_from_host(weight, OCTET_COMPONENT_DATA, w, sizeof w));
  TRY(octet_tensor_copy_from_host(bias_param, OCTET_COMPONENT_DATA, bias, sizeof bias));

  TRY(octet_tensor_create(ctx, &in_desc, &tx));
  TRY(octet_tensor_create(ctx, &out_desc, &ty));
  TRY(octet_tensor_create(ctx, &out_desc, &tdy));

  for (step = 1; step <= STEPS; ++step) {
    /* A fresh batch: x uniform in [-1, 1), target = A x + b. */
    for (r = 0; r < BATCH; ++r) {
      for (j = 0; j < IN; ++j) x[r * IN + j] = uniform();
      for (i = 0; i < OUT; ++i) {
        float t = b[i];
        for (j = 0; j < IN; ++j) t += a[i][j] * x[r * IN + j];
        target[r * OUT + i] = t;
      }
    }
    TRY(octet_tensor_copy_from_host(tx, OCTET_COMPONENT_DATA, x, sizeof x));

    TRY(octet_autocast_begin(ctx, recipe)); /* the layer's GEMMs run in FP8 */
    TRY(octet_layer_forward(layer, tx, ty, 1, &saved));
    TRY(octet_tensor_copy_to_host(ty, OCTET_COMPONENT_DATA, y, sizeof y));
    /* loss = mean (y - target)^2; dloss/dy = 2 (y - target) / n */
    loss = 0.0;
    for (i = 0; i < BATCH * OUT; ++i) {
      const float d = y[i] - target[i];
      loss += (double)d * d;
      dy[i] = 2.0f * d / (float)(BATCH * OUT);
    }
    loss /= (double)(BATCH * OUT);
    TRY(octet_tensor_copy_from_host(tdy, OCTET_COMPONENT_DATA, dy, sizeof dy));
    TRY(octet_layer_backward(layer, &saved, tdy, NULL, 0)); /* consumes saved */
    TRY(octet_autocast_end(ctx));

    if (first_loss < 0.0) first_loss = loss;
    if (step == 1 || step % 50 == 0) printf("step %3d  loss %.6f\n", step, loss);

    /* SGD on the host masters, then back into the layer. */
    TRY(octet_layer_get_gradient(layer, weight_index, &weight_grad));
    TRY(octet_layer_get_gradient(layer, bias_index, &bias_grad));
    TRY(octet_tensor_copy_to_host(weight_grad, OCTET_COMPONENT_DATA, gw, sizeof gw));
    TRY(octet_tensor_copy_to_host(bias_grad, OCTET_COMPONENT_DATA, gbias, sizeof gbias));
    for (i = 0; i < OUT * IN; ++i) w[i] -= LEARNING_RATE * gw[i];
    for (i = 0; i < OUT; ++i) bias[i] -= LEARNING_RATE * gbias[i];
    TRY(octet_tensor_copy_from_host(weight, OCTET_COMPONENT_DATA, w, sizeof w));
    TRY(octet_tensor_copy_from_host(bias_param, OCTET_COMPONENT_DATA, bias, sizeof bias));
    TRY(octet_layer_new_step(layer));
  }

  printf("final loss %.6f = %.4f%% of the initial %.6f\n", loss, 100.0 * loss / first_loss,
         first_loss);
  if (!(loss < 0.01 * first_loss)) {
    fprintf(stderr, "train_linear: the loss did not fall below 1%% of its initial value\n");
  } else {
    result = 0;
  }

done:
  octet_saved_destroy(saved);
  octet_tensor_destroy(tdy);
  octet_tensor_destroy(ty);
  octet_tensor_destroy(tx);
  octet_layer_destroy(layer);
  octet_recipe_destroy(recipe);
  octet_context_destroy(ctx);
  return result;
}
