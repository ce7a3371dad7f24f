#include <ft2build.h>
#include FT_FREETYPE_H

// FT_LOAD_RENDER is a parenthesised shift Swift does not import as a constant.
static inline FT_Int32 cshutter_ft_load_render(void) { return FT_LOAD_RENDER; }
