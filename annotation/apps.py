from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "annotation"

    def ready(self) -> None:
        # Blind verification: the items a verifier may not see the answer of yet (every item
        # selector in benchmark applies it), and the state rule that a verifier may not change
        # the answer of an item they verify (benchmark.permissions.require applies it).
        from annotation.verification import selectors, services
        from benchmark import permissions, visibility

        visibility.register_answer_hiding_rule(selectors.hidden_items)
        permissions.register_state_rule(services.verifier_may_not_edit)
