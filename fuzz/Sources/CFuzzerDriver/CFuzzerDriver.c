// Only the header matters; SwiftPM wants a source file in every C target.
#include "CFuzzerDriver.h"
