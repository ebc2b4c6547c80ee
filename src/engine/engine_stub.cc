// placeholder until the engine lands
#include "engine/engine.h"
