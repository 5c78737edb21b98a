"""The review app's models live in its feature packages; importing them here is what
registers them with Django."""

from review.adjudication.models import *  # noqa: F403
from review.agreement.judge_examples.models import *  # noqa: F403
from review.answer_rendering.models import *  # noqa: F403
from review.evaluation.models import *  # noqa: F403
from review.judges.models import *  # noqa: F403
from review.oracle.models import *  # noqa: F403
from review.releases.models import *  # noqa: F403
from review.runs.models import *  # noqa: F403
