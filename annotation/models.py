"""The annotation app's models live in its feature packages; importing them here is what
registers them with Django."""

from annotation.backward_drafting.models import *  # noqa: F403
from annotation.discarding.models import *  # noqa: F403
from annotation.judgment_tasks.doubt.models import *  # noqa: F403
from annotation.judgment_tasks.models import *  # noqa: F403
from annotation.model_drafts.models import *  # noqa: F403
from annotation.plan_editor.models import *  # noqa: F403
from annotation.tag_review.models import *  # noqa: F403
from annotation.trajectories.models import *  # noqa: F403
from annotation.verification.models import *  # noqa: F403
