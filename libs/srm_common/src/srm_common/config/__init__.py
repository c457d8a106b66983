"""Configuration: srm.yaml or an MM2/SRM properties file, loaded into one validated model.

Use :func:`load_config` (format by extension: ``.yaml``/``.yml`` is YAML, anything else
is properties). The model (:class:`SrmConfig`, :class:`ClusterConfig`,
:class:`FlowConfig`) is pure data with MM2's defaults and precedence applied. Where the
rules live:

* YAML schema: :mod:`srm_common.config.yaml_file`; properties syntax:
  :mod:`srm_common.config.properties_file`;
* known keys and defaults: :mod:`srm_common.config.keys`; which unknown keys are errors
  (with a "did you mean") and which pass through: :mod:`srm_common.config.classify`;
* precedence: :mod:`srm_common.config.resolve` (MM2 keys) and
  :mod:`srm_common.config.clients` (Kafka client configs).

Every problem in a file is reported at once: one :class:`~srm_common.errors.ConfigError`
for a single problem, a :class:`ConfigProblemsError` (also a ``ConfigError``) listing each
as ``file:line, key 'k': message`` for several.
"""

from srm_common.config.loader import load_config, parse_properties_text, parse_yaml_text
from srm_common.config.model import ClientRole, ClusterConfig, FlowConfig, SrmConfig
from srm_common.config.problems import ConfigProblemsError

__all__ = [
    "ClientRole",
    "ClusterConfig",
    "ConfigProblemsError",
    "FlowConfig",
    "SrmConfig",
    "load_config",
    "parse_properties_text",
    "parse_yaml_text",
]
