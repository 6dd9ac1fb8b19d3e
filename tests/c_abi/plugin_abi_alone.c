/* octet_backend.h brings the plugin ABI and octet_types.h, nothing of the
 * users' ABI: every name below is declared again here, which fails to
 * compile if the header (or anything it includes) declared it. */
#include <octet/octet_backend.h>

#ifdef OCTET_OCTET_H
#error "octet_backend.h includes octet.h"
#endif

int OCTET_ABI_MINOR, octet_context_create, octet_recipe_create_delayed;
int OCTET_RECIPE_DELAYED, OCTET_AMAX_MOST_RECENT, OCTET_AMAX_MAX, OCTET_ROLE_INPUT;
int OCTET_LAYER_LAYERNORM, OCTET_LAYER_GELU, OCTET_FEATURE_NORM;

int main(void) {
  /* What both sides share is there, with one value. */
  return OCTET_NORM_RMSNORM == 1 && OCTET_ACTIVATION_SWIGLU == 1 && OCTET_HISTORY_AMAX_MAX == 1 &&
                 OCTET_DTYPE_E4M3 == 10 && OCTET_STATUS_ABI_MISMATCH == 6
             ? 0
             : 1;
}
